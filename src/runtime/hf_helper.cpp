#include "runtime/hf_helper.h"

#include "core/data_files.h"
#include "core/error.h"
#include "core/log.h"
#include "core/subprocess.h"
#include "runtime/doctor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace fs = std::filesystem;

namespace tt {

namespace {

// The helper's exit codes (tools/thintensor_hf.py).
constexpr int k_exit_usage = 2, k_exit_no_torch = 3, k_exit_no_transformers = 4, k_exit_load = 5, k_exit_run = 6;

// A temporary file holding `content`, removed when the object goes.
struct TempFile {
    std::string path;
    explicit TempFile(const std::string& content) {
        const char* tmp = std::getenv("TMPDIR");
        path = (fs::path(tmp && *tmp ? tmp : "/tmp") / "thintensor-hf-XXXXXX.json").string();
        const int fd = ::mkstemps(path.data(), 5);
        if (fd < 0) fail("cannot create a temporary file {}: {}", path, std::strerror(errno));
        size_t done = 0;
        while (done < content.size()) {
            const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                ::close(fd);
                ::unlink(path.c_str());
                fail("cannot write {}: {}", path, std::strerror(errno));
            }
            done += size_t(n);
        }
        ::close(fd);
    }
    ~TempFile() { ::unlink(path.c_str()); }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
};

}  // namespace

std::string find_hf_helper() {
    if (const char* h = std::getenv("THINTENSOR_HF_HELPER"); h && *h) {
        if (!fs::is_regular_file(h)) fail("$THINTENSOR_HF_HELPER names {}, which is not a file", h);
        return h;
    }
    if (std::string found = find_data_file(k_hf_helper_name); !found.empty()) return found;
    fail("cannot find the transformers helper {}: looked in {} (set $THINTENSOR_HF_HELPER to its path)", k_hf_helper_name,
         fmt::join(data_dirs(), " and "));
}

void run_hf_helper(const std::string& mode, nlohmann::json request, HelperOutput out) {
    const std::string helper = find_hf_helper();
    const std::string python = default_python();
    const std::string exe = find_executable(python);
    if (exe.empty())
        fail("{}: not found{}; the transformers helper needs python3 with torch and transformers (set $THINTENSOR_PYTHON)",
             python, python.find('/') == std::string::npos ? " on PATH" : "");
    request["protocol"] = k_hf_protocol;
    request["quiet"] = log::level() == log::Level::quiet;
    const TempFile req(request.dump());
    log::debug("running {} {} {} {}", exe, helper, mode, req.path);

    SubprocessOptions so;
    // Reference mode keeps our stdout for the report (--json); the helper's chatter goes to stderr.
    so.output = out == HelperOutput::to_stderr ? ChildOutput::to_stderr : ChildOutput::inherit;
    // No timeout: loading a large model can take minutes, and Ctrl-C reaches the helper as it
    // stays in our process group.
    const SubprocessResult r = run_subprocess({exe, helper, mode, req.path}, so);
    if (r.signal) fail("the transformers helper ({} {}) was killed by signal {}", exe, helper, r.signal);
    const int code = r.exit_code;
    switch (code) {
    case 0: return;
    case k_exit_no_torch:
        fail("torch is not installed for {} (the transformers helper needs torch and transformers; install them, or "
             "point $THINTENSOR_PYTHON at a python that has them)", exe);
    case k_exit_no_transformers:
        fail("transformers is not installed for {} (install it, or point $THINTENSOR_PYTHON at a python that has it)", exe);
    case k_exit_load: fail("transformers could not load the model (the helper's message is above)");
    case k_exit_usage: fail("the transformers helper {} rejected the request (its message is above)", helper);
    case k_exit_run: fail("the transformers helper failed while running the model (its message is above)");
    default: fail("the transformers helper ({} {}) exited with status {}", exe, helper, code);
    }
}

}  // namespace tt
