#include "core/byte_size.h"

#include "core/error.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace tt {

namespace {

struct Unit {
    const char* suffix;
    double scale;
};
constexpr Unit k_units[] = {
    {"", 1},           {"B", 1},
    {"K", 0x1p10},     {"KiB", 0x1p10}, {"KB", 1e3},
    {"M", 0x1p20},     {"MiB", 0x1p20}, {"MB", 1e6},
    {"G", 0x1p30},     {"GiB", 0x1p30}, {"GB", 1e9},
    {"T", 0x1p40},     {"TiB", 0x1p40}, {"TB", 1e12},
};

bool iequal(const std::string& a, const char* b) {
    size_t i = 0;
    for (; i < a.size() && b[i]; ++i)
        if (std::toupper(static_cast<unsigned char>(a[i])) != std::toupper(static_cast<unsigned char>(b[i]))) return false;
    return i == a.size() && !b[i];
}

}  // namespace

uint64_t parse_byte_size(const std::string& text, const std::string& what) {
    const char* begin = text.c_str();
    char* end = nullptr;
    const double value = std::strtod(begin, &end);
    if (end == begin || !std::isfinite(value) || value < 0)
        fail("{} '{}': expected a size such as 8GiB, 512MiB or 4096", what, text);
    std::string suffix(end);
    while (!suffix.empty() && suffix.front() == ' ') suffix.erase(suffix.begin());
    for (const Unit& u : k_units)
        if (iequal(suffix, u.suffix)) {
            const double bytes = std::floor(value * u.scale);
            if (bytes > 1.8e19) fail("{} '{}': too large", what, text);
            return uint64_t(bytes);
        }
    fail("{} '{}': unknown unit '{}' (use B, KiB, MiB, GiB, TiB, or KB, MB, GB, TB)", what, text, suffix);
}

}  // namespace tt
