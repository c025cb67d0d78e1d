#include "cli/flag_checks.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <thread>

namespace tt::cli {

namespace {

// The whole text as a double (strtod accepts "nan" and "inf", which the callers then refuse).
bool parse_double(const std::string& s, double& out) {
    if (s.empty()) return false;
    char* end = nullptr;
    errno = 0;
    out = std::strtod(s.c_str(), &end);
    return end == s.c_str() + s.size();
}

bool parse_int(const std::string& s, int64_t& out) {
    if (s.empty()) return false;
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (end != s.c_str() + s.size() || errno == ERANGE) return false;
    out = v;
    return true;
}

}  // namespace

CLI::Validator finite_number(double lo, double hi, bool lo_open, bool hi_open, const std::string& rule) {
    return CLI::Validator(
        [=](std::string& in) -> std::string {
            double v = 0;
            if (!parse_double(in, v)) return fmt::format("'{}' is not a number", in);
            // note: the flags are floats; judge the value the float will hold (1e39 would become
            // +Inf and 1e-50 zero after the check).
            if (std::isfinite(v) && std::fabs(v) <= std::numeric_limits<float>::max()) v = double(float(v));
            else v = std::numeric_limits<double>::infinity();
            if (!std::isfinite(v)) return fmt::format("must be a finite number {}, got {}", rule, in);
            const bool ok = (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
            if (!ok) return fmt::format("must be {}, got {}", rule, in);
            return {};
        },
        "");  // no description: each flag's help text states its range
}

CLI::Validator non_negative_number() {
    return finite_number(0, std::numeric_limits<double>::infinity(), false, true, ">= 0");
}

CLI::Validator positive_number() {
    return finite_number(0, std::numeric_limits<double>::infinity(), true, true, "> 0");
}

CLI::Validator int_in(int64_t lo, int64_t hi, const std::string& rule) {
    return CLI::Validator(
        [=](std::string& in) -> std::string {
            int64_t v = 0;
            if (!parse_int(in, v)) return fmt::format("'{}' is not a whole number", in);
            if (v < lo || v > hi) return fmt::format("must be {}, got {}", rule, in);
            return {};
        },
        "");
}

CLI::Validator int_at_least(int64_t lo) {
    return int_in(lo, std::numeric_limits<int32_t>::max(), fmt::format("at least {}", lo));
}

int max_threads() {
    const unsigned hw = std::thread::hardware_concurrency();
    return 4 * int(hw > 0 ? hw : 1);
}

}  // namespace tt::cli
