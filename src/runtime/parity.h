// What "passes" means for `validate --hf-model`: default bounds per profile and per precision of
// the two sides, and the greedy-continuation rule. docs/VALIDATION.md explains the numbers.
#pragma once

#include "runtime/kv_cache_type.h"
#include "runtime/profile.h"

#include <cstdint>
#include <span>
#include <string>

namespace tt {

struct ParityThresholds {
    double min_cosine = 0;    // every compared position at least this (cosine of the logit vectors)
    double max_mean_kl = 0;   // mean KL(reference || ours) per prompt at most this (nats)
    double max_abs_diff = 0;  // max |delta logit| at most this; infinity = not checked
    bool greedy = true;       // the greedy continuation must follow the reference (see check_greedy)
};

// archive_f32: every tensor of the archive is float32; reference_f32: transformers ran in float32.
// Both f32: safe 0.99999 / 1e-4, balanced 0.9999 / 1e-3 (min cosine / mean KL). Anything in bf16
// on either side: 0.999 / 1e-2, for both profiles: the bf16 rounding of the weights or of the
// reference's own activations, not ThinTensor's arithmetic, then dominates (the ../shared fixtures'
// bf16 logits are at cosine 0.9998 from their f32 ones). The quantized profiles: their
// reference_file_thresholds (below).
ParityThresholds default_parity_thresholds(Profile profile, bool archive_f32, bool reference_f32);

// `validate --reference FILE`'s default bounds. Float profiles: strict (an f32 archive against
// logits_f32) min cosine 0.99999 and max |delta logit| 1e-3, else min cosine 0.999; no KL bound.
// Quantized profiles (against the f32 logits; the quantization error dominates whatever the
// archive's float dtype): max-performance (INT8) min cosine 0.999, mean KL 1e-3; max-max-perf
// (INT4, groups of 32) min cosine 0.97, mean KL 0.05; max |delta logit| unchecked. Measured on
// TinyStories-656K and the hf-tiny fixtures: docs/QUANTIZATION.md.
ParityThresholds reference_file_thresholds(Profile profile, bool strict);

// The 8-bit KV cache (--kv-cache int8) on top of a profile's bounds: min cosine and mean KL no
// tighter than 0.9995 and 1e-3; a strict check's max |delta logit| becomes a mean KL of 1e-3
// (a float profile's own bounds are the float cache's rounding; the quantized profiles' stay:
// the cache adds ~0.3% to INT4's KL).
// Measured on TinyStories-656K and the hf-tiny fixtures: docs/QUANTIZATION.md.
ParityThresholds with_kv_cache(ParityThresholds t, KvCacheType kv);

// A bf16 reference carries its own rounding. When transformers also computed the same weights in
// float32, a prompt that misses the cosine or KL bound against the bf16 reference still passes on
// that measure if ThinTensor is at least as close to the float32 logits as transformers' bf16 run
// is: ours_vs_f32 / bf16_vs_f32 are (min cosine, mean KL) of ThinTensor and of transformers' bf16
// logits against the float32 ones.
struct NoiseFloorCheck {
    bool cosine_ok = false;  // ours_min_cos >= bf16_min_cos
    bool kl_ok = false;      // ours_mean_kl <= bf16_mean_kl
};
NoiseFloorCheck within_reference_noise(double ours_min_cos, double ours_mean_kl, double bf16_min_cos, double bf16_mean_kl);

struct GreedyCheck {
    int matched = 0;          // leading tokens equal to the reference's
    int total = 0;            // reference tokens
    bool near_tie = false;    // diverged where the reference's top-2 gap was within the tolerance
    double gap = 0;           // the reference's top-1 minus top-2 logit at the divergence
    bool pass = true;
};

// ThinTensor's greedy continuation against the reference's. Both take the argmax at every step, so
// they agree until the two disagree on the best token; the first divergence is accepted only where
// the reference's own top-2 gap (ref_margins) is at most `tie_tolerance` (a near-tie that the
// observed logit error can flip); from there on the contexts differ and nothing more is compared.
GreedyCheck check_greedy(std::span<const int32_t> ours, std::span<const int32_t> ref, std::span<const float> ref_margins,
                         double tie_tolerance);

}  // namespace tt
