#include "backends/cuda/device_info.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

namespace tt::cuda {

std::vector<DeviceInfo> list_devices(std::string* why) {
    std::vector<DeviceInfo> out;
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        if (why) *why = cudaGetErrorString(e);
        cudaGetLastError();  // clear the sticky error so later probes start clean
        return out;
    }
    for (int i = 0; i < n; ++i) {
        cudaDeviceProp p{};
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
        DeviceInfo d;
        d.index = i;
        d.name = p.name;
        d.cc_major = p.major;
        d.cc_minor = p.minor;
        d.total_memory = p.totalGlobalMem;
        d.multiprocessors = p.multiProcessorCount;
        size_t free_b = 0, total_b = 0;
        if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) d.free_memory = free_b;
        out.push_back(d);
    }
    if (out.empty() && why) *why = "no CUDA device found";
    return out;
}

static std::string version_string(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

std::string runtime_version() {
    int v = 0;
    return cudaRuntimeGetVersion(&v) == cudaSuccess ? version_string(v) : "unknown";
}

std::string driver_version() {
    int v = 0;
    return cudaDriverGetVersion(&v) == cudaSuccess && v > 0 ? version_string(v) : "none";
}

}  // namespace tt::cuda
