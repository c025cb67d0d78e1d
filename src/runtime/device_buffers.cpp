// The CUDA backend's buffer sizes (see device_buffers.h).
#include "runtime/device_buffers.h"

#include "model/model_spec.h"

#include <algorithm>

namespace tt {

namespace {

// The largest per-layer sizes (the model-wide ones when no layer overrides them).
struct LayerMax {
    uint64_t q = 0, q_proj = 0, kv = 0, ffn = 0, heads = 0, kv_heads = 0, partial = 0;
};
LayerMax layer_max(const ModelSpec& s, int n_splits) {
    LayerMax m;
    m.ffn = uint64_t(s.ffn_dim);
    for (int il = 0; il < s.n_layers; ++il) {
        if (!s.is_moe(il)) m.ffn = std::max(m.ffn, uint64_t(s.layer_ffn_dim(il)));
        if (!s.is_attention(il)) continue;
        m.q = std::max(m.q, uint64_t(s.layer_q_dim(il)));
        m.q_proj = std::max(m.q_proj, uint64_t(s.layer_q_proj_rows(il)));
        m.kv = std::max(m.kv, uint64_t(s.layer_kv_dim(il)));
        m.heads = std::max(m.heads, uint64_t(s.layer_n_heads(il)));
        m.kv_heads = std::max(m.kv_heads, uint64_t(s.layer_n_kv_heads(il)));
        m.partial = std::max(m.partial, uint64_t(decode_attention_partial_floats(s.layer_n_heads(il), s.layer_head_dim(il), n_splits)));
    }
    // A model without attention layers still gets the model-wide sizes (the buffers are named for them).
    if (m.q == 0) {
        m.q = uint64_t(s.q_dim());
        m.q_proj = uint64_t(s.q_proj_rows());
        m.kv = uint64_t(s.kv_dim());
        m.heads = uint64_t(s.n_heads);
        m.kv_heads = uint64_t(s.n_kv_heads);
        m.partial = decode_attention_partial_floats(s.n_heads, s.head_dim, n_splits);
    }
    return m;
}

}  // namespace

bool prefill_needs_scores(const ModelSpec& s, DType weights) {
    for (int il = 0; il < s.n_layers; ++il)
        if (s.is_attention(il) && !flash_prefill_supported(kv_cache_dtype(weights), s.layer_head_dim(il))) return true;
    return false;
}

int min_kv_heads(const ModelSpec& s) {
    int m = s.n_kv_heads;
    for (int il = 0; il < s.n_layers; ++il)
        if (s.is_attention(il)) m = std::min(m, s.layer_n_kv_heads(il));
    return m;
}

PrefillBuffers prefill_buffers(const ModelSpec& s, int tokens, int keys, DType weights, int logit_rows, KvCacheType kv_type) {
    // q and the probabilities in the cache's float dtype (the weights' one beside an 8-bit cache).
    const uint64_t we = dtype_size(weights), ke = dtype_size(kv_cache_dtype(weights));
    const uint64_t T = uint64_t(tokens), K = uint64_t(keys), qc = uint64_t(std::min(tokens, k_attn_query_chunk));
    const LayerMax m = layer_max(s, 1);
    const uint64_t H = uint64_t(s.hidden_dim), Q = m.q, KV = m.kv, F = m.ffn;
    const bool scores = prefill_needs_scores(s, weights);
    PrefillBuffers b{};
    auto set = [&](PrefillBuf i, const char* name, uint64_t bytes) { b[size_t(i)] = {name, bytes}; };
    set(PrefillBuf::x, "residual stream", T * H * 4);
    set(PrefillBuf::h, "normalized input", T * H * we);
    set(PrefillBuf::qkv, "q/k/v projection", T * (m.q_proj + 2 * KV) * 4);
    set(PrefillBuf::q_roped, "roped q", T * Q * ke);
    set(PrefillBuf::scores, "attention scores", scores ? m.heads * qc * K * 4 : 0);
    set(PrefillBuf::probs, "attention probabilities", scores ? m.heads * qc * K * ke : 0);
    set(PrefillBuf::att, "attention output", T * Q * we);
    set(PrefillBuf::proj, "projection before its post-norm", s.sandwich_norm ? T * H * 4 : 0);
    // A shared expert runs through the dense MLP's buffers (a layer has one or the other).
    // Gemma 4's per-layer gated product uses act too.
    const uint64_t SF = s.has_moe() ? uint64_t(s.moe.shared_ffn_dim) : 0, MF = std::max({F, SF, uint64_t(s.per_layer_dim)});
    set(PrefillBuf::gate_up, "gate and up", T * 2 * MF * we);
    set(PrefillBuf::act, "gated activation", T * MF * we);
    set(PrefillBuf::ids, "token ids", T * 4);
    set(PrefillBuf::logits, "logits", uint64_t(logit_rows) * uint64_t(s.vocab_size) * 4);
    {  // mixture-of-experts layers only: 0 bytes (named still) for dense models
        const uint64_t moe = s.has_moe() ? 1 : 0;
        const uint64_t A = moe * T * uint64_t(s.moe.top_k), EF = uint64_t(s.moe.expert_ffn_dim);
        set(PrefillBuf::moe_logits, "router logits", moe * T * uint64_t(s.moe.n_experts) * 4);
        set(PrefillBuf::moe_ids, "chosen experts", A * 4);
        set(PrefillBuf::moe_weights, "routing weights", A * 4);
        set(PrefillBuf::moe_rows, "expert-grouped rows", A * 4);
        set(PrefillBuf::moe_tokens, "tokens of grouped rows", A * 4);
        set(PrefillBuf::moe_x, "expert inputs", A * H * we);
        set(PrefillBuf::moe_gate_up, "expert gate and up", A * 2 * EF * we);
        set(PrefillBuf::moe_act, "expert activations", A * EF * we);
        set(PrefillBuf::moe_y, "expert outputs", A * H * 4);
        const uint64_t shared = SF > 0 ? 1 : 0, gated = shared && s.moe.shared_gate ? 1 : 0;
        set(PrefillBuf::shexp_y, "shared expert output", shared * T * H * 4);
        set(PrefillBuf::shexp_logit, "shared expert gate logits", gated * T * 4);
    }
    {  // Qwen3.5's gated attention and DeltaNet layers only
        const DeltaNetSpec& d = s.delta_net;
        const uint64_t dn = s.has_delta_net() ? 1 : 0;
        set(PrefillBuf::q_gate, "query and output gate", s.attn_output_gate ? 2 * T * Q * 4 : 0);
        set(PrefillBuf::dn_in, "linear-attention projections",
            dn * T * uint64_t(d.conv_dim() + d.value_dim() + 2 * d.n_v_heads) * 4);
        set(PrefillBuf::dn_scratch, "linear-attention scratch",
            dn * delta_net_prefill_scratch_floats(d.n_k_heads, d.n_v_heads, d.k_head_dim, d.v_head_dim, tokens) * 4);
        // The attention output buffer also holds a DeltaNet layer's output (out_proj's input).
        if (dn) b[size_t(PrefillBuf::att)].bytes = T * std::max(Q, uint64_t(d.value_dim())) * we;
    }
    set(PrefillBuf::kv_rows, "8-bit KV cache rows, dequantized", kv_type == KvCacheType::int8 ? 2 * K * KV * we : 0);
    {  // Gemma 4's per-layer inputs only
        const uint64_t P = uint64_t(s.per_layer_dim);
        set(PrefillBuf::ple, "per-layer inputs", T * uint64_t(s.n_layers) * P * 4);
        set(PrefillBuf::ple_gate, "per-layer input gate", T * P * 4);
        // Their projection back to the hidden size goes through proj.
        if (P > 0) b[size_t(PrefillBuf::proj)].bytes = T * H * 4;
    }
    return b;
}

DecodeBuffers decode_buffers(const ModelSpec& s, int n_splits) {
    const LayerMax m = layer_max(s, n_splits);
    const uint64_t H = uint64_t(s.hidden_dim), Q = m.q, KV = m.kv, F = m.ffn;
    DecodeBuffers b{};
    auto set = [&](DecodeBuf i, const char* name, uint64_t bytes) { b[size_t(i)] = {name, bytes}; };
    set(DecodeBuf::x, "residual stream", H * 4);
    set(DecodeBuf::q, "q", Q * 4);
    set(DecodeBuf::k, "k", KV * 4);
    set(DecodeBuf::v, "v", KV * 4);
    set(DecodeBuf::att, "attention output", Q * 4);
    set(DecodeBuf::tmp, "projection scratch", std::max(H, F) * 4);
    set(DecodeBuf::ffn, "gated activation", F * 4);
    set(DecodeBuf::logits, "logits", uint64_t(s.vocab_size) * 4);
    set(DecodeBuf::partial, "attention partials", m.partial * 4);
    set(DecodeBuf::arrivals, "attention arrival counters", m.kv_heads * 4);
    set(DecodeBuf::io, "token, position, result", 4 * 4);
    set(DecodeBuf::post_arrivals, "post-norm arrival counter", s.sandwich_norm ? 4 : 0);
    set(DecodeBuf::x_alt, "residual stream (second buffer)", s.sandwich_norm ? H * 4 : 0);
    // two [hidden] weights and a scalar per layer, each 16-byte aligned, at most 4 bytes an element
    set(DecodeBuf::post_norms, "post-norm weights (copies)", s.sandwich_norm ? uint64_t(s.n_layers) * (2 * (H * 4 + 16) + 16) : 0);
    {  // mixture-of-experts layers only
        const uint64_t K = s.has_moe() ? uint64_t(s.moe.top_k) : 0;
        set(DecodeBuf::moe_logits, "router logits", K ? uint64_t(s.moe.n_experts) * 4 : 0);
        set(DecodeBuf::moe_ids, "chosen experts", K * 4);
        set(DecodeBuf::moe_weights, "routing weights", K * 4);
        set(DecodeBuf::moe_ptrs, "chosen experts' addresses", K * sizeof(void*));
        set(DecodeBuf::moe_act, "expert activations", K * uint64_t(s.moe.expert_ffn_dim) * 4);
        set(DecodeBuf::moe_partial, "expert outputs", K * H * 4);
        const uint64_t SF = K ? uint64_t(s.moe.shared_ffn_dim) : 0, shared = SF > 0 ? 1 : 0;
        set(DecodeBuf::shexp_act, "shared expert activation", SF * 4);
        set(DecodeBuf::shexp_out, "shared expert output", shared * H * 4);
        set(DecodeBuf::shexp_logit, "shared expert gate logit", shared && s.moe.shared_gate ? 4 : 0);
    }
    {  // Qwen3.5 only
        const DeltaNetSpec& d = s.delta_net;
        const uint64_t dn = s.has_delta_net() ? 1 : 0, g = s.attn_output_gate ? 1 : 0;
        set(DecodeBuf::qg, "query and output gate", g * 2 * Q * 4);
        set(DecodeBuf::gate, "output gate", g * Q * 4);
        set(DecodeBuf::dn_in, "linear-attention projections", dn * uint64_t(d.conv_dim() + d.value_dim() + 2 * d.n_v_heads) * 4);
        set(DecodeBuf::dn_out, "linear-attention output", dn * uint64_t(d.value_dim()) * 4);
        set(DecodeBuf::dn_scratch, "linear-attention scratch", dn * delta_net_decode_scratch_floats(d.n_v_heads, d.v_head_dim) * 4);
        set(DecodeBuf::dn_arrivals, "linear-attention arrival counters", dn * uint64_t(d.n_k_heads + d.n_v_heads) * 4);
    }
    {  // Gemma 4's per-layer inputs only
        const uint64_t P = uint64_t(s.per_layer_dim);
        set(DecodeBuf::ple, "per-layer inputs", uint64_t(s.n_layers) * P * 4);
        set(DecodeBuf::ple_gate, "per-layer input gate", P * 4);
    }
    return b;
}

namespace {
// `context` rows of kv_dim values, and with the 8-bit cache a scale per KV head a row.
KvCacheParts kv_parts(int context, int kv_dim, int n_kv_heads, DType weights, KvCacheType kv) {
    return {uint64_t(context) * uint64_t(kv_dim) * dtype_size(kv_cache_dtype(weights, kv)),
            kv == KvCacheType::int8 ? uint64_t(context) * uint64_t(n_kv_heads) * 4 : 0};
}
}  // namespace

KvCacheParts kv_cache_layer_parts(const ModelSpec& s, int il, int context, DType weights, KvCacheType kv) {
    return s.has_kv(il) ? kv_parts(context, s.layer_kv_dim(il), s.layer_n_kv_heads(il), weights, kv) : KvCacheParts{};
}

uint64_t kv_cache_layer_bytes(const ModelSpec& s, int context, DType weights, KvCacheType kv) {
    const KvCacheParts p = kv_parts(context, s.kv_dim(), s.n_kv_heads, weights, kv);
    return p.values + p.scales;
}

uint64_t kv_cache_layer_bytes(const ModelSpec& s, int il, int context, DType weights, KvCacheType kv) {
    const KvCacheParts p = kv_cache_layer_parts(s, il, context, weights, kv);
    return p.values + p.scales;
}

uint64_t kv_cache_bytes(const ModelSpec& s, int context, DType weights, KvCacheType kv) {
    uint64_t b = 0;
    for (int il = 0; il < s.n_layers; ++il)
        b += 2 * kv_cache_layer_bytes(s, il, context, weights, kv);
    return b;
}

}  // namespace tt
