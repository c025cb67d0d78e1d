// What the KV cache stores (issue #19: an 8-bit KV cache halves the bytes decode attention reads
// at depth). `floating` is each backend's float cache: f32 on the CPU reference and the host path,
// the archive's float dtype on CUDA. `int8` stores each (position, KV head) row of head_dim values
// as INT8 with one f32 scale: the weights' INT8 row rounding (core/quant.h: scale = max|x| / 127,
// q = round_half_even(x / scale)), applied to the key after its norm and RoPE and to the value.
// A scale per row factors out of both attention products (q.k = scale_k * (q.k_q), and the
// weighted sum of values folds scale_v into each probability), so a kernel can run the products
// on the INT8 values exactly widened (|q| <= 127 is exact in bf16) and scale after.
// `--kv-cache auto` (the default) asks the profile (runtime/profile.h, profile_kv_cache); which
// cache a run then gets on a device is runtime/kv_cache_choice.h's. docs/QUANTIZATION.md has the
// measured quality.
#pragma once

#include <cstdint>
#include <string>

namespace tt {

enum class KvCacheType : uint8_t { floating, int8 };
// What --kv-cache asked for: `automatic` is the profile's cache, the others are that cache.
enum class KvCacheRequest : uint8_t { automatic, floating, int8 };

// "auto" / "float" / "int8"; throws tt::Error naming --kv-cache and the choices for anything else.
KvCacheRequest parse_kv_cache_request(const std::string& name);
const char* kv_cache_request_name(KvCacheRequest r);
// "float" / "int8": the names the flag gives the two caches.
const char* kv_cache_type_name(KvCacheType t);

// One token's k or v row of n_heads x head_dim floats rounded through the INT8 cache in place:
// quantized per head, then dequantized (float(q) * scale), which is what every later read of the
// cache sees. The CPU reference's cache keeps these f32 values; a backend storing the INT8 values
// and scales reads back the same numbers.
void round_kv_row_int8(float* row, int n_heads, int head_dim);

}  // namespace tt
