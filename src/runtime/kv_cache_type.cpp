#include "runtime/kv_cache_type.h"

#include "core/error.h"
#include "core/quant.h"

#include <vector>

namespace tt {

KvCacheRequest parse_kv_cache_request(const std::string& name) {
    if (name == "auto") return KvCacheRequest::automatic;
    if (name == "float") return KvCacheRequest::floating;
    if (name == "int8") return KvCacheRequest::int8;
    fail("--kv-cache '{}': unknown KV cache type (choose auto, float or int8)", name);
}

const char* kv_cache_request_name(KvCacheRequest r) {
    switch (r) {
    case KvCacheRequest::automatic: return "auto";
    case KvCacheRequest::floating: return "float";
    case KvCacheRequest::int8: return "int8";
    }
    TT_ASSERT(false);
}

const char* kv_cache_type_name(KvCacheType t) { return t == KvCacheType::int8 ? "int8" : "float"; }

void round_kv_row_int8(float* row, int n_heads, int head_dim) {
    std::vector<uint8_t> q(static_cast<size_t>(head_dim));
    for (int h = 0; h < n_heads; ++h) {
        float* x = row + size_t(h) * size_t(head_dim);
        float scale = 0;
        quantize_row(QuantScheme::int8, 0, x, head_dim, q.data(), &scale);
        dequantize_row(QuantScheme::int8, 0, q.data(), &scale, head_dim, x);
    }
}

}  // namespace tt
