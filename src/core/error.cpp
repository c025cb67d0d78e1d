#include "core/error.h"

#include <cstdio>
#include <cstdlib>

namespace tt {

void assert_fail(const char* expr, const char* file, int line, const std::string& msg) {
    std::fprintf(stderr, "thintensor: internal error: %s failed at %s:%d%s%s\n", expr, file, line,
                 msg.empty() ? "" : ": ", msg.c_str());
    std::abort();
}

}  // namespace tt
