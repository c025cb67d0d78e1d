// Running another program and waiting for it, with an optional timeout: the one copy used by the
// doctor's python probe (src/runtime/doctor.cpp) and the transformers helper
// (src/runtime/hf_helper.cpp). posix_spawn rather than fork: this process may already run CUDA
// driver threads, and a forked copy of them is undefined. The child's stdin is /dev/null.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tt {

// Where the child's stdout and stderr go.
enum class ChildOutput {
    capture,    // both into SubprocessResult::output (one pipe, so they interleave as written)
    to_stderr,  // stdout onto our stderr (our stdout stays free for a report), stderr inherited
    inherit,    // both inherited
};

struct SubprocessOptions {
    ChildOutput output = ChildOutput::capture;
    // 0: wait as long as it takes. Otherwise the child runs in its own process group, and the
    // whole group (the child and whatever it started) is killed with SIGKILL at the deadline.
    // note: without a timeout the child stays in our process group, so Ctrl-C reaches it too.
    double timeout_s = 0;
    size_t max_output = size_t(1) << 20;  // capture keeps the last this many bytes
};

struct SubprocessResult {
    int exit_code = -1;      // the exit status when it exited, else -1
    int signal = 0;          // the signal that ended it, else 0
    bool timed_out = false;  // killed at the deadline (then signal is SIGKILL)
    std::string output;      // captured stdout + stderr (ChildOutput::capture), possibly the tail only
    double seconds = 0;      // wall time from the start to the end of the wait
    bool exited_ok() const { return !timed_out && signal == 0 && exit_code == 0; }
};

// The file execvp would run for `name` (searched on $PATH unless it holds a '/'), or "" when none.
std::string find_executable(const std::string& name);

// Runs argv[0] (found with find_executable) with arguments argv[1..] and waits for it. Throws
// tt::Error naming the program when it is not found or cannot be started; a non-zero exit, a
// signal or a timeout is reported in the result, not thrown.
SubprocessResult run_subprocess(const std::vector<std::string>& argv, const SubprocessOptions& opt = {});

}  // namespace tt
