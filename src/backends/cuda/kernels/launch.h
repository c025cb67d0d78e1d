// Programmatic dependent launch (PDL, Hopper and later): a kernel launched with it may start
// while the kernel before it in the stream is still finishing. Its blocks do the work that reads
// nothing the previous kernel writes (the decode GEMVs issue their first weight loads) and then
// wait for it (pdl_wait() in launch.cuh). In a decode step of ~160 small launches, the gap
// between two kernels — drain, launch, ramp-up — is a large share of the time.
//
// The backend turns it on around the decode-step capture only (DependentLaunchScope); every kernel
// launched through launch() while it is on must call pdl_wait() before it touches memory another
// kernel writes. Host-only header.
#pragma once

namespace tt::cuda {

inline bool& dependent_launch_flag() {
    static thread_local bool on = false;
    return on;
}

class DependentLaunchScope {
public:
    explicit DependentLaunchScope(bool on) : saved_(dependent_launch_flag()) { dependent_launch_flag() = on; }
    ~DependentLaunchScope() { dependent_launch_flag() = saved_; }
    DependentLaunchScope(const DependentLaunchScope&) = delete;
    DependentLaunchScope& operator=(const DependentLaunchScope&) = delete;

private:
    bool saved_;
};

}  // namespace tt::cuda
