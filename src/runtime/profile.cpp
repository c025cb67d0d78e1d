#include "runtime/profile.h"

#include "core/error.h"

namespace tt {

Profile parse_profile(const std::string& name) {
    if (name == "safe") return Profile::safe;
    if (name == "balanced") return Profile::balanced;
    if (name == "max-performance") return Profile::max_performance;
    if (name == "max-max-perf") return Profile::max_max_perf;
    fail("--profile '{}': unknown profile (choose safe, balanced, max-performance or max-max-perf)", name);
}

const char* profile_name(Profile p) {
    switch (p) {
    case Profile::safe: return "safe";
    case Profile::balanced: return "balanced";
    case Profile::max_performance: return "max-performance";
    case Profile::max_max_perf: return "max-max-perf";
    }
    TT_ASSERT(false);
}

QuantScheme profile_weight_scheme(Profile p) {
    switch (p) {
    case Profile::max_performance: return QuantScheme::int8;
    case Profile::max_max_perf: return QuantScheme::int4;
    default: return QuantScheme::none;
    }
}

KvCacheType profile_kv_cache(Profile p) { return p == Profile::max_max_perf ? KvCacheType::int8 : KvCacheType::floating; }

}  // namespace tt
