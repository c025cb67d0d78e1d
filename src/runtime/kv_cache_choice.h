// Which KV cache a run stores: --kv-cache's request (runtime/kv_cache_type.h), `auto` taking the
// profile's (profile_kv_cache: 8 bits under max-max-perf), and what the device can hold. The CPU
// reference and the host path store any head_dim in 8 bits. CUDA's decode attention copies cache
// rows in 16-byte pieces, so its 8-bit cache needs every cached layer's head_dim a multiple of 16: an
// explicit `--kv-cache int8` on a model without it is an error naming the layer, while the
// profile's default falls back to the float cache with a warning the caller prints (never a silent
// change of what was asked). Pure functions of the spec, so `plan`, the CUDA backend and the unit
// tests share one rule without a GPU.
#pragma once

#include "model/model_spec.h"
#include "runtime/kv_cache_type.h"
#include "runtime/profile.h"

#include <string>

namespace tt {

// --kv-cache for a backend that stores every layer's cache in 8 bits (the CPU reference, the host
// path): the request, or the profile's cache for `auto`.
KvCacheType resolve_kv_cache(KvCacheRequest r, Profile p);

// Why CUDA's 8-bit cache cannot hold spec's cache ("layer 3 has head_dim 8"), or "" when it can.
std::string cuda_kv_int8_unsupported_reason(const ModelSpec& s);

struct KvCacheChoice {
    KvCacheType type = KvCacheType::floating;
    // Non-empty when the profile's 8-bit cache fell back to the float one: why, for the caller to
    // print as a warning (the backend when it loads, `plan` before its table).
    std::string warning;
};
// The cache the CUDA backend stores for `model` (named in the messages). Throws tt::Error when
// --kv-cache int8 was asked explicitly of a model CUDA cannot store in 8 bits.
KvCacheChoice cuda_kv_cache(const ModelSpec& s, KvCacheRequest r, Profile p, const std::string& model);

}  // namespace tt
