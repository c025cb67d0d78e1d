#include "runtime/parity.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>

namespace tt {

ParityThresholds default_parity_thresholds(Profile profile, bool archive_f32, bool reference_f32) {
    ParityThresholds t;
    t.max_abs_diff = INFINITY;  // logit scales differ between models; cosine and KL are scale-aware
    if (profile_weight_scheme(profile) != QuantScheme::none) return reference_file_thresholds(profile, false);
    if (archive_f32 && reference_f32) {
        t.min_cosine = profile == Profile::safe ? 0.99999 : 0.9999;
        t.max_mean_kl = profile == Profile::safe ? 1e-4 : 1e-3;
    } else {
        t.min_cosine = 0.999;
        t.max_mean_kl = 1e-2;
    }
    return t;
}

ParityThresholds reference_file_thresholds(Profile profile, bool strict) {
    ParityThresholds t;
    t.max_abs_diff = INFINITY;
    t.max_mean_kl = INFINITY;
    switch (profile_weight_scheme(profile)) {
    case QuantScheme::int8:
        t.min_cosine = 0.999;
        t.max_mean_kl = 1e-3;
        return t;
    case QuantScheme::int4:
        t.min_cosine = 0.97;
        t.max_mean_kl = 0.05;
        return t;
    case QuantScheme::none: break;
    }
    t.min_cosine = strict ? 0.99999 : 0.999;
    if (strict) t.max_abs_diff = 1e-3;
    return t;
}

ParityThresholds with_kv_cache(ParityThresholds t, KvCacheType kv) {
    if (kv != KvCacheType::int8) return t;
    t.min_cosine = std::min(t.min_cosine, 0.9995);
    // A strict f32 check's |delta logit| bound is the float cache's rounding; the 8-bit cache's
    // error is bounded by KL instead.
    if (std::isfinite(t.max_abs_diff)) {
        t.max_abs_diff = INFINITY;
        if (std::isinf(t.max_mean_kl)) t.max_mean_kl = 1e-3;
    }
    t.max_mean_kl = std::max(t.max_mean_kl, 1e-3);
    return t;
}

NoiseFloorCheck within_reference_noise(double ours_min_cos, double ours_mean_kl, double bf16_min_cos, double bf16_mean_kl) {
    return {ours_min_cos >= bf16_min_cos, ours_mean_kl <= bf16_mean_kl};
}

GreedyCheck check_greedy(std::span<const int32_t> ours, std::span<const int32_t> ref, std::span<const float> ref_margins,
                         double tie_tolerance) {
    TT_ASSERT(ref_margins.size() == ref.size());
    GreedyCheck g;
    g.total = int(ref.size());
    const size_t n = std::min(ours.size(), ref.size());
    while (size_t(g.matched) < n && ours[size_t(g.matched)] == ref[size_t(g.matched)]) ++g.matched;
    if (g.matched == g.total) return g;
    if (size_t(g.matched) == ours.size()) {  // ours is shorter: nothing to judge the rest by
        g.pass = false;
        return g;
    }
    g.gap = ref_margins[size_t(g.matched)];
    // A NaN gap or tolerance is no near-tie (NaN <= x is false anyway; said here so it stays so).
    g.near_tie = std::isfinite(g.gap) && std::isfinite(tie_tolerance) && g.gap <= tie_tolerance;
    g.pass = g.near_tie;
    return g;
}

}  // namespace tt
