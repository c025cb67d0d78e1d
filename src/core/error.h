// Errors, in the three tiers of ../shared/STYLE.md:
//  - bad input (files, flags, network): throw tt::Error with context; the CLI prints it once and
//    exits non-zero. Library code never calls exit().
//  - broken invariants: assert / TT_ASSERT (a bug in ThinTensor, not in the user's input).
//  - CUDA/cuBLAS calls: a check macro in src/backends/cuda naming statement, file and line.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace tt {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// fail("bad thing in {}", path): formats and throws tt::Error.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
    throw Error(fmt::format(f, std::forward<Args>(args)...));
}

[[noreturn]] void assert_fail(const char* expr, const char* file, int line, const std::string& msg);

}  // namespace tt

// Always on, also in release builds: invariants guard memory safety of mmap'd data.
#define TT_ASSERT(cond, ...)                                                                      \
    do {                                                                                          \
        if (!(cond)) ::tt::assert_fail(#cond, __FILE__, __LINE__, ::fmt::format("" __VA_ARGS__)); \
    } while (0)
