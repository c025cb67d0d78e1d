// Subprocesses with a timeout (see subprocess.h).
#include "core/subprocess.h"

#include "core/error.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>

extern char** environ;

namespace fs = std::filesystem;

namespace tt {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void sleep_ms(int ms) {
    timespec ts{0, long(ms) * 1000000L};
    while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

// Owns the posix_spawn attribute objects (destroyed on every path out).
struct SpawnSetup {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    SpawnSetup() {
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
    }
    ~SpawnSetup() {
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
    }
    SpawnSetup(const SpawnSetup&) = delete;
    SpawnSetup& operator=(const SpawnSetup&) = delete;
};

// note: ECHILD (SIGCHLD inherited as ignored: the kernel reaps the child itself) leaves its exit
// status unknown; that is an error, never a success.
[[noreturn]] void status_lost(pid_t pid) {
    fail("cannot learn how child process {} ended: {} (is SIGCHLD ignored?)", pid, std::strerror(errno));
}

// waitpid without blocking: true (and *status) once the child has ended.
bool reaped(pid_t pid, int* status) {
    for (;;) {
        const pid_t r = ::waitpid(pid, status, WNOHANG);
        if (r == pid) return true;
        if (r == 0) return false;
        if (errno != EINTR) status_lost(pid);
    }
}

void wait_for(pid_t pid, int* status) {
    while (::waitpid(pid, status, 0) < 0)
        if (errno != EINTR) status_lost(pid);
}

}  // namespace

std::string find_executable(const std::string& name) {
    if (name.empty()) return "";
    if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 && !fs::is_directory(name) ? name : "";
    const char* path = std::getenv("PATH");
    std::string_view rest = path ? path : "/usr/bin:/bin";
    while (true) {
        const size_t colon = rest.find(':');
        // note: fs::path rather than string concatenation, which trips GCC 12's -Wrestrict at -O3.
        const std::string_view d = rest.substr(0, colon);
        const std::string cand = (fs::path(d.empty() ? std::string_view(".") : d) / name).string();
        if (::access(cand.c_str(), X_OK) == 0 && !fs::is_directory(cand)) return cand;
        if (colon == std::string_view::npos) break;
        rest.remove_prefix(colon + 1);
    }
    return "";
}

SubprocessResult run_subprocess(const std::vector<std::string>& argv, const SubprocessOptions& opt) {
    if (argv.empty()) fail("run_subprocess: no program given");
    const std::string& name = argv[0];
    const std::string exe = find_executable(name);
    if (exe.empty()) fail("{}: not found{}", name, name.find('/') == std::string::npos ? " on PATH" : " (or not executable)");

    const bool capture = opt.output == ChildOutput::capture, timed = opt.timeout_s > 0;
    int pipe_fd[2] = {-1, -1};
    if (capture && ::pipe2(pipe_fd, O_CLOEXEC) != 0) fail("{}: cannot create a pipe: {}", exe, std::strerror(errno));
    SubprocessResult res;
    pid_t pid = -1;
    int rc = 0;
    {
        SpawnSetup s;
        posix_spawn_file_actions_addopen(&s.fa, 0, "/dev/null", O_RDONLY, 0);
        if (capture) {
            posix_spawn_file_actions_adddup2(&s.fa, pipe_fd[1], 1);
            posix_spawn_file_actions_adddup2(&s.fa, pipe_fd[1], 2);
        } else if (opt.output == ChildOutput::to_stderr) {
            posix_spawn_file_actions_adddup2(&s.fa, 2, 1);
        }
        if (timed) {
            // Its own process group, so the deadline can end the child and anything it started.
            posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETPGROUP);
            posix_spawnattr_setpgroup(&s.attr, 0);
        }
        std::vector<std::string> args = argv;
        args[0] = exe;
        std::vector<char*> cargv;
        for (auto& a : args) cargv.push_back(a.data());
        cargv.push_back(nullptr);
        rc = ::posix_spawn(&pid, exe.c_str(), &s.fa, &s.attr, cargv.data(), environ);
    }
    if (capture) ::close(pipe_fd[1]);
    if (rc != 0) {
        if (capture) ::close(pipe_fd[0]);
        fail("{}: cannot run: {}", exe, std::strerror(rc));
    }

    const auto t0 = Clock::now();
    auto left_s = [&] { return timed ? opt.timeout_s - seconds_since(t0) : 1e9; };
    int status = 0;
    bool done = false;  // reaped
    if (capture) {
        char chunk[4096];
        bool eof = false;
        while (!eof) {
            const double left = left_s();
            if (left <= 0) {
                res.timed_out = true;
                break;
            }
            pollfd p{pipe_fd[0], POLLIN, 0};
            // Wake up now and then to notice a child that exited while something it started
            // still holds the pipe open.
            const int pr = ::poll(&p, 1, int(std::min(left * 1000.0, 100.0)) + 1);
            if (pr < 0 && errno == EINTR) continue;
            if (pr < 0) break;
            if (pr == 0) {
                if (!done && reaped(pid, &status)) done = true;
                if (done) break;
                continue;
            }
            const ssize_t n = ::read(pipe_fd[0], chunk, sizeof chunk);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                eof = true;
                break;
            }
            res.output.append(chunk, size_t(n));
            if (res.output.size() > 2 * opt.max_output) res.output.erase(0, res.output.size() - opt.max_output);
        }
        ::close(pipe_fd[0]);
        if (res.output.size() > opt.max_output) res.output.erase(0, res.output.size() - opt.max_output);
    }
    // The output is closed (or not captured): wait for the exit, up to the deadline.
    while (!done && !res.timed_out) {
        if (!timed) {
            wait_for(pid, &status);
            done = true;
        } else if (reaped(pid, &status)) {
            done = true;
        } else if (left_s() <= 0) {
            res.timed_out = true;
        } else {
            sleep_ms(int(std::clamp(left_s() * 1000.0, 1.0, 10.0)));
        }
    }
    if (res.timed_out) {
        ::kill(-pid, SIGKILL);  // the group: the child and whatever it started
        if (!done) {
            wait_for(pid, &status);
            done = true;
        }
    }
    if (WIFEXITED(status)) res.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) res.signal = WTERMSIG(status);
    res.seconds = seconds_since(t0);
    return res;
}

}  // namespace tt
