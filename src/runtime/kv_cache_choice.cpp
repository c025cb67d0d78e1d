#include "runtime/kv_cache_choice.h"

#include "core/error.h"

#include <fmt/format.h>

namespace tt {

KvCacheType resolve_kv_cache(KvCacheRequest r, Profile p) {
    switch (r) {
    case KvCacheRequest::automatic: return profile_kv_cache(p);
    case KvCacheRequest::floating: return KvCacheType::floating;
    case KvCacheRequest::int8: return KvCacheType::int8;
    }
    TT_ASSERT(false);
}

std::string cuda_kv_int8_unsupported_reason(const ModelSpec& s) {
    // note: decode attention copies each cache row into shared memory in whole 16-byte pieces
    // (attention.cu's decode_attention refuses anything else), and an 8-bit row is head_dim bytes.
    // The first layer that breaks it is named.
    for (int il = 0; il < s.n_layers; ++il)
        if (s.has_kv(il) && s.layer_head_dim(il) % 16 != 0)
            return fmt::format("layer {} has head_dim {}, and CUDA's 8-bit KV cache needs a multiple of 16", il, s.layer_head_dim(il));
    return {};
}

KvCacheChoice cuda_kv_cache(const ModelSpec& s, KvCacheRequest r, Profile p, const std::string& model) {
    KvCacheChoice c;
    c.type = resolve_kv_cache(r, p);
    if (c.type != KvCacheType::int8) return c;
    const std::string why = cuda_kv_int8_unsupported_reason(s);
    if (why.empty()) return c;
    if (r == KvCacheRequest::int8) fail("{}: --kv-cache int8 on CUDA: {}; use --kv-cache float, or --device cpu or host", model, why);
    c.type = KvCacheType::floating;
    c.warning = fmt::format("{}: --profile {} stores the KV cache in 8 bits, but {}: the KV cache stays in the weights' float "
                            "dtype on CUDA (--kv-cache float says so and silences this; --device cpu or host run the 8-bit cache)",
                            model, profile_name(p), why);
    return c;
}

}  // namespace tt
