#include "format/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tt {

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

bool checked_numel(const Shape& s, uint64_t& out) {
    uint64_t n = 1;
    for (auto d : s) {
        if (d < 0) return false;
        if (d != 0 && n > UINT64_MAX / uint64_t(d)) return false;
        n *= uint64_t(d);
    }
    out = n;
    return true;
}

}  // namespace tt
