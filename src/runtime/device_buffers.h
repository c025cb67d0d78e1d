// The CUDA backend's device buffers as pure arithmetic: one list of (name, bytes) per phase that the
// backend allocates from (src/backends/cuda/cuda_backend.cpp iterates it) and the fit planner sums
// (src/runtime/plan.cpp), so the bytes the plan budgets are the bytes the backend asks for, by
// construction rather than by a hand-kept mirror. Also the few kernel facts that decide those
// sizes (which prefill attention runs, the chunk sizes, the most decode splits): the kernels read
// them from here too.
//
// No CUDA in here (model logic never sees CUDA), and C++17 only: the .cu files include it.
#pragma once

#include "core/dtype.h"
#include "runtime/kv_cache_type.h"

#include <array>
#include <cstddef>
#include <cstdint>

namespace tt {

struct ModelSpec;

// Prompts are run in chunks of this many tokens (the prefill workspace is sized for one chunk).
inline constexpr int k_prefill_chunk = 2048;
constexpr int prefill_chunk_tokens(int context) { return context < k_prefill_chunk ? context : k_prefill_chunk; }
// Without the flash kernel, prefill attention materializes scores for this many queries at a time.
inline constexpr int k_attn_query_chunk = 512;
// Decode attention splits a sequence over at most this many blocks per KV head.
inline constexpr int k_max_decode_splits = 256;

// The KV cache holds the weights' dtype, as in transformers: bf16 for bf16 models, and f32 for f32
// models so the f32 reference fixtures are compared without an extra rounding. --kv-cache int8:
// INT8 rows with an f32 scale each (kv_cache_type.h); attention then computes in the weights'
// dtype, so q, the probabilities and the prefill's dequantized rows keep it.
constexpr DType kv_cache_dtype(DType weights) { return weights; }
constexpr DType kv_cache_dtype(DType weights, KvCacheType kv) { return kv == KvCacheType::int8 ? DType::i8 : weights; }

// Whether the flash prefill kernel (kernels/flash_attention.cu) covers a cache of `kv` with this
// head_dim; otherwise prefill attention materializes its scores (the score and probability
// buffers below).
constexpr bool flash_prefill_supported(DType kv, int head_dim) {
    return (kv == DType::bf16 || kv == DType::f16) && (head_dim == 64 || head_dim == 128 || head_dim == 256);
}

// Floats of one query head's row in decode attention's scratch: the unnormalized output, its max
// and sum, padded to a multiple of 4 so that the split merge reads rows in 16-byte loads (head_dim
// is a multiple of 8).
constexpr int decode_attention_partial_row(int head_dim) { return head_dim + 4; }
// Floats of decode attention's scratch for n_splits splits: [n_kv_heads, n_splits, group, partial_row].
constexpr size_t decode_attention_partial_floats(int n_heads, int head_dim, int n_splits) {
    return size_t(n_heads) * size_t(n_splits) * size_t(decode_attention_partial_row(head_dim));
}

struct BufferSize {
    const char* name;
    uint64_t bytes;  // 0: not allocated for this model
};

// The prefill workspace, one entry per buffer (indices of prefill_buffers()).
enum class PrefillBuf : int {
    x,        // f32 [T, hidden]: the residual stream
    h,        // weights' dtype [T, hidden]: the normalized input of the next matrix product
    qkv,      // f32 [T, q + 2 kv]: the fused q/k/v projection
    q_roped,  // KV dtype [T, q]: q after norm and RoPE
    scores,   // f32 [heads, min(T, 512), K]: without the flash kernel only
    probs,    // KV dtype [heads, min(T, 512), K]: likewise
    att,      // weights' dtype [T, q]: the attention output
    proj,     // f32 [T, hidden]: a projection before its post-norm (sandwich norms only)
    gate_up,  // weights' dtype [T, 2 max(ffn, shared_ffn)]: a dense MLP's, or a shared expert's
    act,      // weights' dtype [T, max(ffn, shared_ffn)]
    ids,      // int32 [T]
    logits,   // f32 [logit_rows, vocab]
    // Mixture-of-experts layers (0 bytes for dense models); A = T * top_k token-expert assignments,
    // grouped by expert:
    moe_logits,   // f32 [T, n_experts]: router logits
    moe_ids,      // int32 [A]: the chosen experts, per token
    moe_weights,  // f32 [A]: their routing weights
    moe_rows,     // int32 [A]: the grouped row of each assignment
    moe_tokens,   // int32 [A]: the token of each grouped row
    moe_x,        // weights' dtype [A, hidden]: the tokens' normalized inputs, grouped by expert
    moe_gate_up,  // weights' dtype [A, 2 expert_ffn]
    moe_act,      // weights' dtype [A, expert_ffn]
    moe_y,        // f32 [A, hidden]: each assignment's expert output
    // A shared expert (Qwen2-MoE / Qwen3.5-MoE; 0 bytes without one); its gate and up products
    // and its activation use gate_up and act, as a dense MLP's:
    shexp_y,      // f32 [T, hidden]: its output
    shexp_logit,  // f32 [T]: its gate's logit (shared_gate only)
    // Qwen3.5 (0 bytes for other models):
    q_gate,       // f32 [T, q] x 2: the de-interleaved query and the output gate (attn_output_gate)
    dn_in,        // f32: a DeltaNet layer's projections, back to back: qkv [T, conv_dim], z [T, value_dim], b, a [T, v_heads]
    dn_scratch,   // f32: delta_net_prefill's scratch (kernels.h)
    kv_rows,      // weights' dtype [2, K, kv]: the 8-bit cache's rows dequantized for prefill attention (--kv-cache int8 only)
    // Gemma 4's per-layer inputs (0 bytes for other models); the layer's product of its gate and
    // its input uses act, the projection proj:
    ple,          // f32 [T, n_layers * per_layer_dim]: every layer's input
    ple_gate,     // f32 [T, per_layer_dim]: a layer's per_layer_input_gate output
    count
};
using PrefillBuffers = std::array<BufferSize, size_t(PrefillBuf::count)>;

// Per-layer sizes differ (Gemma 4: head_dim 256 and 512, double-wide MLPs): every buffer below
// holds the largest layer's, [q], [kv] and [ffn] meaning the largest over the layers.

// Buffers of a prefill of chunks of `tokens` with up to `keys` cached positions, logits for
// `logit_rows` rows (the planner budgets one: the last; all-position logits, as `validate` asks
// for, take up to a chunk of rows and grow the logits buffer then).
PrefillBuffers prefill_buffers(const ModelSpec& s, int tokens, int keys, DType weights, int logit_rows,
                               KvCacheType kv = KvCacheType::floating);

// The decode step's buffers (fixed addresses: the CUDA graph refers to them).
enum class DecodeBuf : int {
    x,         // f32 [hidden]
    q,         // f32 [q]
    k,         // f32 [kv]
    v,         // f32 [kv]
    att,       // f32 [q]
    tmp,       // f32 [max(hidden, ffn)]
    ffn,       // f32 [ffn]
    logits,    // f32 [vocab]
    partial,   // f32: decode attention's scratch for n_splits
    arrivals,  // int32 [n_kv_heads]: decode attention's self-resetting counters
    io,        // int32 [4]: {token, position, result, prefill argmax}
    post_arrivals,  // int32 [1]: the GEMV's fused post-norm's self-resetting counter (sandwich norms only)
    x_alt,     // f32 [hidden]: the residual stream's other buffer (sandwich norms only: GemvArgs::pending)
    post_norms,  // per layer: copies of ffn_post_norm, per_layer_post_norm, layer_scalar (sandwich norms; sized for f32)
    // Mixture-of-experts layers (0 bytes for dense models):
    moe_logits,   // f32 [n_experts]: router logits
    moe_ids,      // int32 [top_k]: the chosen experts
    moe_weights,  // f32 [top_k]: their routing weights
    moe_ptrs,     // pointers [top_k]: where the chosen experts' weights are (picked on the device)
    moe_act,      // f32 [top_k, expert_ffn]
    moe_partial,  // f32 [top_k, hidden]: each chosen expert's output
    // A shared expert (0 bytes without one):
    shexp_act,    // f32 [shared_ffn]: its gated activation
    shexp_out,    // f32 [hidden]: its output
    shexp_logit,  // f32 [1]: its gate's logit (shared_gate only)
    // Qwen3.5 (0 bytes for other models):
    qg,           // f32 [2 q]: q_proj's output, query and gate side by side (attn_output_gate)
    gate,         // f32 [q]: the output gate
    dn_in,        // f32 [conv_dim + value_dim + 2 v_heads]: a DeltaNet layer's qkv | z | b | a
    dn_out,       // f32 [value_dim]: its gated, normalized output (out_proj's input)
    dn_scratch,   // f32: delta_net_decode's scratch
    dn_arrivals,  // int32 [k_heads + v_heads]: its self-resetting counters
    // Gemma 4's per-layer inputs (0 bytes for other models); the projection back uses tmp:
    ple,          // f32 [n_layers * per_layer_dim]: every layer's input
    ple_gate,     // f32 [per_layer_dim]: a layer's gate output, then its gated product (in place)
    count
};
using DecodeBuffers = std::array<BufferSize, size_t(DecodeBuf::count)>;

// n_splits: the backend's (from its SM count); the planner passes k_max_decode_splits.
DecodeBuffers decode_buffers(const ModelSpec& s, int n_splits);

// Floats of the DeltaNet kernels' scratch (kernels/delta_net.cu lays it out; the backend and the
// planner size it from here). Decode: o before its norm. Prefill: the conv output [n, conv_dim],
// g and beta [n, Hv], and per (64-token chunk, value head) W [64, dk] and the intra-chunk
// attention [64, 64].
constexpr size_t delta_net_decode_scratch_floats(int n_v_heads, int v_head_dim) {
    return size_t(n_v_heads) * size_t(v_head_dim);
}
constexpr size_t delta_net_prefill_scratch_floats(int n_k_heads, int n_v_heads, int k_head_dim, int v_head_dim, int n) {
    const size_t conv_dim = 2 * size_t(n_k_heads) * size_t(k_head_dim) + size_t(n_v_heads) * size_t(v_head_dim);
    const size_t chunks = (size_t(n) + 63) / 64;
    return size_t(n) * conv_dim + 2 * size_t(n) * size_t(n_v_heads) + chunks * size_t(n_v_heads) * 64 * (size_t(k_head_dim) + 64);
}

// Bytes of one layer's K (or V) cache for `context` positions: the model-wide kv_dim's, and
// layer il's (its own kv_dim; 0 for a layer without a cache of its own).
// kv: --kv-cache (int8: a byte a value and an f32 scale a (position, KV head) row).
uint64_t kv_cache_layer_bytes(const ModelSpec& s, int context, DType weights, KvCacheType kv = KvCacheType::floating);
uint64_t kv_cache_layer_bytes(const ModelSpec& s, int il, int context, DType weights, KvCacheType kv = KvCacheType::floating);
// Layer il's K (or V) cache as the backend allocates it: the values, and the 8-bit cache's row
// scales (0 otherwise); kv_cache_layer_bytes is their sum.
struct KvCacheParts {
    uint64_t values = 0, scales = 0;
};
KvCacheParts kv_cache_layer_parts(const ModelSpec& s, int il, int context, DType weights, KvCacheType kv);
// Whether some attention layer's prefill needs materialized scores (no flash kernel for its head_dim).
bool prefill_needs_scores(const ModelSpec& s, DType weights);
// The decode attention's split count is chosen for the fewest KV heads of any attention layer.
int min_kv_heads(const ModelSpec& s);
// Bytes of every K and V cache for `context` positions: the layers with a cache of their own
// (ModelSpec::has_kv), each at its own kv_dim; Gemma 4's KV-shared layers add nothing.
uint64_t kv_cache_bytes(const ModelSpec& s, int context, DType weights, KvCacheType kv = KvCacheType::floating);

template <size_t N>
uint64_t total_bytes(const std::array<BufferSize, N>& list) {
    uint64_t t = 0;
    for (const BufferSize& b : list) t += b.bytes;
    return t;
}

}  // namespace tt
