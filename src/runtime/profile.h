// Numerical profiles: what a backend may trade for speed. `safe` keeps f32 activations, f32
// accumulation and f32 softmax everywhere (weights and KV cache stay as stored) and takes no
// risky fusions; `balanced` is the fast default (e.g. the CUDA prefill feeds bf16 activations to
// tensor-core GEMMs, as transformers' bf16 run does); `max-performance` runs the body's
// projections in INT8 and `max-max-perf` in INT4 (groups of 32), both with an INT8 head
// (model/weight_quant.h, docs/QUANTIZATION.md), quantized at load from a float archive or read as
// stored from a `convert --quant` one.
#pragma once

#include "core/quant.h"
#include "runtime/kv_cache_type.h"

#include <string>

namespace tt {

enum class Profile { safe, balanced, max_performance, max_max_perf };

// "safe" / "balanced" / "max-performance" / "max-max-perf"; throws tt::Error listing the profiles
// for anything else.
Profile parse_profile(const std::string& name);
const char* profile_name(Profile p);
// The weight scheme of the body's projections the profile asks for (none: the weights as stored).
QuantScheme profile_weight_scheme(Profile p);
// The KV cache the profile stores when --kv-cache is auto: 8 bits under max-max-perf (issue #19:
// at depth the cache is a large share of what decode reads beside INT4 weights, and it adds 0.3% to
// INT4's KL, docs/QUANTIZATION.md), float under the others.
KvCacheType profile_kv_cache(Profile p);
// Every profile's name, for help texts and `inspect`.
inline constexpr const char* k_profile_names[] = {"safe", "balanced", "max-performance", "max-max-perf"};

}  // namespace tt
