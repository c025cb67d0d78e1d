// Host entry points of the CUDA kernel families (one family per .cu file in this folder). Only
// plain pointers and enums cross this header, so callers need no CUDA device code. Every entry
// point launches on `stream` and checks the launch.
#pragma once

#include "core/dtype.h"
#include "core/quant.h"
#include "runtime/device_buffers.h"  // decode_attention_partial_floats, the split and flash limits

#include <cuda_runtime.h>

#include <cstdint>

namespace tt::cuda {

// ---- embedding.cu ----
// x[t, :] = embd[ids[t], :] * scale for t < n (f32 out).
void embedding(const void* embd, DType dt, const int32_t* ids, int n, int hidden, float scale, float* x, cudaStream_t s);

// ---- norm.cu ----
// Per row t < n: if add != null, x += add (add optionally first RMS-normalized with add_norm_w:
// Gemma's post-norms); then out = rmsnorm(x) * (w + offset) written as out_dt (f32/f16/bf16).
// w / add_norm_w are in dtype wdt. x [n, hidden] is the f32 residual stream (updated in place).
// out == null: only the residual update. row_scale (a [1] weight in wdt, or null): x is multiplied
// by it after the add and before the norm (Gemma 4's layer_scalar).
void residual_rmsnorm(float* x, const float* add, const void* add_norm_w, const void* w, DType wdt, float offset,
                      float eps, int n, int hidden, void* out, DType out_dt, cudaStream_t s, const void* row_scale = nullptr);

// ---- rope.cu ----
// For n tokens at positions pos0 + t (pos0 read from device memory *d_pos0 when non-null, else
// the value pos0): add biases, per-head q/k RMSNorm (when q_norm/k_norm non-null), RoPE on the
// first rotary_dim dims of each head, then write k and v rows into the caches (kv_dt) at their
// positions and q (f32 in place, and also as q_out in q_out_dt when q_out non-null).
// Gemma 4: k == null for a KV-shared layer (only q is prepared, nothing is written to a cache);
// v may alias k (attention_k_eq_v: the values are the raw key projection, read before k is
// normalized, which never happens in place); v_norm normalizes each v head without a weight.
struct RopeArgs {
    float* q; float* k; const float* v;       // [n, q_dim], [n, kv_dim], [n, kv_dim] (f32, rows q/k/v_stride apart)
    int q_stride, k_stride, v_stride;          // row strides in floats
    const void* bq; const void* bk; const void* bv;  // biases (wdt) or null
    const void* q_norm; const void* k_norm;    // [head_dim] (wdt) or null
    DType wdt;
    float norm_offset, norm_eps;
    const float* inv_freq;                     // [rotary_dim / 2] on device
    float attention_factor;
    int rotary_dim;
    int n_heads, n_kv_heads, head_dim;
    int n;
    const int* d_pos0; int pos0;
    void* k_cache; void* v_cache; DType kv_dt; // [n_ctx, kv_dim]
    void* q_out; DType q_out_dt;               // [n, q_dim] or null
    bool v_norm;                               // Gemma 4's unweighted v-norm (eps norm_eps)
    float* k_scale = nullptr; float* v_scale = nullptr;  // kv_dt i8 (the 8-bit cache): [n_ctx, n_kv_heads] row scales
};
void rope_qkv(const RopeArgs& a, cudaStream_t s);

enum class GateAct { silu, gelu_tanh };

// ---- gemv.cu ----  decode matrix-vector products, one token, weights streamed at full bandwidth.
struct GemvSegment {
    const void* w;   // [rows, cols] in the weight dtype, or quantized (GemvArgs::quant)
    const void* b;   // [rows] or null
    float* y;        // [rows] out
    int rows;
    const float* scales = nullptr;  // quantized: the f32 scales of w (core/quant.h)
};
// Gemma's post-norm, deferred into the GEMV that next reads the residual stream (q/k/v, the
// per-layer gate, the output head): the projection that produces y (down, the per-layer
// projection) only writes it, and every block of the next GEMV forms its own input x = (residual +
// rmsnorm(y) * (norm + norm_offset)) * row_scale in its prologue, as residual_rmsnorm does; block 0
// stores that x in `out`. That saves the producer's fused post-norm (post_norm below), whose last
// block ran a serial tail after all the others. (The gated MLP GEMV takes its input from a fused
// post-norm instead: the pending prologue made its main loop slower, docs/BENCHMARKS.md.) out must
// not alias residual: the other blocks are still reading it.
struct PendingResidual {
    const float* y;         // [cols] the producing GEMV's output; null: nothing pending
    const float* residual;  // [cols] the residual stream before the add
    const void* norm;       // [cols] the post-norm weight (wdt)
    const void* row_scale;  // [1] (wdt) or null: Gemma 4's layer_scalar
    float* out;             // [cols] the residual stream after it
    float norm_offset, norm_eps;
};
struct GemvArgs {
    GemvSegment seg[3];   // up to three matrices sharing the input (q, k, v)
    int n_seg;
    int cols;
    DType wdt;
    const float* x;       // [cols] f32 input (unused when pending.y is set)
    const void* norm_w;   // when non-null: x is RMS-normalized with this weight first (pre-norm fused)
    float norm_offset, norm_eps;
    bool accumulate;      // y += W x (residual add fused) instead of y = W x
    // Gemma 4's gated per-layer input (one segment): y = act(W x + b) * y_mul (f32 [rows]) when non-null.
    const float* y_mul;
    GateAct y_act;
    // Gemma's post-norm, fused (one segment, not accumulate): when post_norm is non-null, the last
    // block to finish adds rmsnorm(y) * (post_norm + norm_offset) to residual [rows], then
    // multiplies residual by *row_scale when non-null (Gemma 4's layer_scalar), as
    // residual_rmsnorm does. post_arrivals: one int, zero before the first launch (self-resetting).
    const void* post_norm;
    float* residual;
    const void* row_scale;
    int* post_arrivals;
    PendingResidual pending;  // the input is the pending residual (then norm_w, when set, normalizes it)
    // Quantized weights (every segment alike; wdt stays the float dtype of norms and biases): the
    // GEMV of quant.cu, which takes the pre-norm, bias and accumulate but none of Gemma's fused
    // epilogues above (post_norm, y_mul, pending: the caller settles those apart).
    QuantScheme quant;
    int group_size;       // int4
};
void gemv(const GemvArgs& a, cudaStream_t s);
// y = act(Wg xn + bg) * (Wu xn + bu), xn = rmsnorm(x) * (norm_w + offset): the MLP's first half.
// Quantized gate and up (quant != none): their scales gs, us (core/quant.h).
void gemv_gated(const void* wg, const void* wu, const void* bg, const void* bu, DType wdt, int rows, int cols,
                const float* x, const void* norm_w, float norm_offset, float norm_eps, GateAct act, float* y,
                cudaStream_t s, QuantScheme quant = QuantScheme::none, const float* gs = nullptr, const float* us = nullptr,
                int group_size = 0);

// ---- quant.cu ----  quantized weights (core/quant.h; docs/QUANTIZATION.md).
// The decode GEMVs of gemv() and gemv_gated() when their weights are INT8/INT4: the values are
// widened to exact f16 in registers and multiplied on the tensor cores with x split into two f16
// parts (f32 accumulation), scaled per row (INT8) or per group (INT4); odd INT8 row lengths take
// a scalar CUDA-core loop.
void gemv_quant(const GemvArgs& a, cudaStream_t s);
void gemv_gated_quant(const void* wg, const void* wu, const float* gs, const float* us, QuantScheme quant, int group_size,
                      const void* bg, const void* bu, DType wdt, int rows, int cols, const float* x, const void* norm_w,
                      float norm_offset, float norm_eps, GateAct act, float* y, cudaStream_t s);
// Prefill: out[r, c] = float(q[r, c]) * scale for rows [0, rows), rounded to out_dt (bf16/f16/f32):
// the values core/quant.h's dequantize_row computes, as a tensor-core GEMM's operand.
void dequantize(const void* q, const float* scales, QuantScheme quant, int group_size, int rows, int cols, void* out,
                DType out_dt, cudaStream_t s);

// ---- activation.cu ----  prefill: out[t, i] = act(g[t, i]) * u[t, i] (+ biases), as out_dt.
// g and u (in_dt) rows are ld elements apart (f when separate, 2f when gate and up share one GEMM output).
void gated_act(const void* g, const void* u, DType in_dt, int ld, const void* bg, const void* bu, DType wdt, int n, int f,
               GateAct act, void* out, DType out_dt, cudaStream_t s);
// y[t, i] += b[i] for t < n, i < rows (the bias after a cuBLAS GEMM).
void add_bias(float* y, const void* b, DType wdt, int n, int rows, cudaStream_t s);
// x = cap * tanh(x / cap): logit soft-capping.
void softcap(float* x, int64_t n, float cap, cudaStream_t s);
// out[i] = x[i] rounded to dt, for i < n: f32 activations as a GEMM operand.
void to_dtype(const float* x, int64_t n, void* out, DType dt, cudaStream_t s);

// ---- per_layer.cu ----  Gemma 4's per-layer inputs.
// For each token t < n and layer l: p = proj[t, l*P:(l+1)*P] * proj_scale, p = rmsnorm(p) *
// (norm_w + norm_offset), then proj[t, l*P + i] = (p[i] + table[ids[t], l*P + i] * table_scale) *
// input_scale, in place (f32). table (wdt, [vocab, n_layers * P]) may be registered host memory.
struct PerLayerInputArgs {
    float* proj;              // [n, n_layers * P] f32: per_layer_model_projection(embeddings), in, and the inputs, out
    const void* table;        // embed_tokens_per_layer [vocab, n_layers * P] (wdt)
    const int32_t* ids;       // [n] token ids (device)
    const void* norm_w;       // per_layer_projection_norm [P] (wdt)
    DType wdt;
    float norm_offset, norm_eps;
    float proj_scale, table_scale, input_scale;  // hidden ** -0.5, sqrt(P) in the table's dtype, 2 ** -0.5
    int n, n_layers, per_layer_dim;
};
void per_layer_inputs(const PerLayerInputArgs& a, cudaStream_t s);
// out[t, i] = act(g[t, i]) * pli[t * ld_pli + i] for t < n, i < per_layer_dim: g [n, P] f32 (the
// per_layer_input_gate's output), pli the layer's slice of the per-layer inputs; out [n, P] in out_dt.
void per_layer_gate_act(const float* g, const float* pli, int ld_pli, int n, int per_layer_dim, GateAct act, void* out,
                        DType out_dt, cudaStream_t s);

// ---- attention.cu ----
// Decode (one query per head) with the sequence split over blocks (flash-decoding), GQA-aware:
// K/V rows are read once for the n_heads / n_kv_heads query heads that share them; the last block
// of each KV head merges the splits. The sequence length is *d_pos + 1 read on the device (so the
// launch can live in a CUDA graph). With rope_fused, q and the new k/v are the raw projections
// (rope.q/k/v, n = 1): biases, q/k norm and RoPE are applied in the kernel, and k/v are written
// into the cache at *d_pos before use (rope.k_cache/v_cache must equal k_cache/v_cache; a
// KV-shared layer passes rope.k = null and the source layer's caches; the cache in the weights'
// dtype, rope.wdt). head_dim <= 512 and a multiple of 8, GQA group <= 16. Caches 16-byte aligned.
// Batched (n_rows > 1, rope_fused only: the server's decode step of several sequences): row r's
// q/k/v are rope.q/k/v + r * rope.q/k/v_stride, its position d_pos[r], its cache the caches +
// d_slot[r] * slot_stride elements (each sequence its own), its output out_w + r * out_stride in
// the weights' dtype (the next GEMM's input), its scratch partial + r * partial_stride floats and
// arrivals + r * n_kv_heads.
struct DecodeAttnArgs {
    const float* q;            // [n_heads * head_dim], already rotated (when !rope_fused)
    const void* k_cache; const void* v_cache; DType kv_dt;  // [n_ctx, kv_dim]
    float* out;                // [n_heads * head_dim]
    float* partial;            // scratch: [n_kv_heads, n_splits, group, decode_attention_partial_row(head_dim)]
    int* arrivals;             // scratch: [n_kv_heads] ints, zero before the first launch (self-resetting)
    const int* d_pos;
    int n_heads, n_kv_heads, head_dim, n_ctx, n_splits;
    int window;                // sliding window (0 = full)
    float scale, softcap;
    bool rope_fused;
    RopeArgs rope;             // when rope_fused
    int n_rows = 1;
    const int* d_slot = nullptr;  // [n_rows] or null (every row in the caches as given)
    size_t slot_stride = 0;       // elements between two sequences' caches
    void* out_w = nullptr;        // batched output, [n_rows, out_stride] in rope.wdt
    int out_stride = 0;
    size_t partial_stride = 0;
    bool cuda_cores_only = false;  // tests and A/B benchmarks: the CUDA-core kernel even where the tensor-core one applies
    // kv_dt i8, the 8-bit cache (runtime/kv_cache_type.h): [n_ctx, n_kv_heads] scales of the rows,
    // a sequence's at d_slot[r] * slot_stride / head_dim floats (rope.k_scale/v_scale the same
    // arrays). Both kernels take it (the values widened exactly, the scales applied to the scores
    // and to the probabilities; the tensor-core one's products in f16); the weights stay in rope.wdt.
    const float* k_scale = nullptr; const float* v_scale = nullptr;
};
void decode_attention(const DecodeAttnArgs& a, cudaStream_t s);
// Whether decode_attention runs on the tensor cores (16-bit and 8-bit caches, head_dim 64 or 128):
// q and the probabilities are then rounded to the cache's dtype (f16 beside the 8-bit cache) for
// the two products, as in prefill; the CUDA-core kernel keeps q and the probabilities in f32.
bool decode_attention_tensor_cores(DType kv_dt, int head_dim, int group);
// Splits per KV head for a GPU of n_sms (at most k_max_decode_splits); the scratch `partial` holds
// decode_attention_partial_floats(n_heads, head_dim, n_splits) floats (runtime/device_buffers.h).
int decode_attention_splits(int n_kv_heads, int n_sms);
// Prefill: scores [heads, n_q, n_k] (f32) -> probabilities (out_dt) in place of a separate buffer,
// with scale, soft-capping, the causal mask (query i sits at position q_pos0 + i) and the sliding window.
void masked_softmax(const float* scores, void* probs, DType out_dt, int n_heads, int n_q, int n_k, int q_pos0,
                    int window, float scale, float softcap, cudaStream_t s);

// ---- flash_attention.cu ----
// Prefill attention without a score buffer (FlashAttention-2 style, tensor cores, sm_80+): for
// each query head h and query i (at position q_pos0 + i), out = softmax(s) V over the keys
// [lo, q_pos0 + i], lo = window > 0 ? max(0, pos - window + 1) : 0, where s = q.k * scale, then
// s = softcap * tanh(s / softcap) when softcap > 0 (as masked_softmax); softmax in f32, the
// probabilities rounded to dt for the P V product, f32 accumulation. GQA: q head h reads KV head
// h / (n_heads / n_kv_heads). All pointers 16-byte aligned; strides multiples of 8 elements.
struct PrefillAttnArgs {
    const void* q; int q_stride;                // [n_q rows], row stride in elements; head h at h*head_dim (already roped/normed)
    const void* k_cache; const void* v_cache;   // [n_ctx, n_kv_heads*head_dim] rows; keys 0..q_pos0+n_q-1 valid
    void* out; int out_stride;                  // [n_q rows], head h at h*head_dim
    DType dt;                                   // bf16 or f16 for q, caches and out
    int n_q, n_heads, n_kv_heads, head_dim;
    int q_pos0;                                 // query i sits at position q_pos0 + i
    int window;                                 // sliding window (0 = full)
    float scale, softcap;                       // softcap 0 = none
};
// bf16/f16 with head_dim 64, 128 or 256: flash_prefill_supported (runtime/device_buffers.h).
bool prefill_attention_supported(DType dt, int head_dim);
void prefill_attention(const PrefillAttnArgs& a, cudaStream_t s);

// ---- moe.cu ----  mixture-of-experts FFN (docs/ARCHITECTURE.md, "Layers of different kinds").
// Routing, for n token rows: p = softmax(logits[t, 0:n_experts]) in f32, the top_k largest
// (descending; equal values keep the lower index first, as torch.topk; cpu::moe_route is the
// reference), their probabilities renormalised to sum 1 when norm_topk: ids[t*top_k + j],
// weights[t*top_k + j]. When `table` is non-null (decode, resident experts), also
// ptrs[t*top_k + j] = table[ids[t*top_k + j]]: the device picks the experts' weights, so the
// decode graph needs no host round trip.
void moe_route(const float* logits, int n, int n_experts, int top_k, bool norm_topk, int32_t* ids, float* weights,
               const void* const* table, const void** ptrs, cudaStream_t s);
// Decode expert GEMVs for one token. Each selected expert is one contiguous block: gate [ffn,
// hidden] at its base, up [ffn, hidden] at base + up_offset, down [hidden, ffn] at base +
// down_offset (bytes; the archive's per-expert block, every expert laid out alike).
struct MoeGemvArgs {
    const void* const* experts;   // [top_k] device array: each selected expert's block base
    size_t up_offset, down_offset;
    // Quantized experts (none: float rows of wdt): the f32 scales of gate, up and down, at these
    // byte offsets from the block base as the weights are (docs/QUANTIZATION.md).
    QuantScheme quant = QuantScheme::none;
    int group_size = 0;  // INT4
    size_t gate_scales = 0, up_scales = 0, down_scales = 0;
    DType wdt;
    int top_k, ffn, hidden;
    const float* x;               // [hidden] residual stream (f32)
    const void* norm_w;           // fused pre-FFN RMSNorm weight [hidden] (wdt)
    float norm_offset, norm_eps;
    GateAct act;
    float* act_out;               // [top_k, ffn]: act(G_j xn) * (U_j xn)
    float* partial;               // [top_k, hidden]: D_j act_out[j]
};
// act_out[j, :] = act(G_j xn) * (U_j xn), xn = rmsnorm(x) * (norm_w + offset), for j < top_k.
void moe_gemv_gated(const MoeGemvArgs& a, cudaStream_t s);
// partial[j, :] = D_j act_out[j, :] for j < top_k.
void moe_gemv_down(const MoeGemvArgs& a, cudaStream_t s);
// The same two on quantized expert blocks (quant.cu; moe_gemv_gated/down call them).
void moe_gemv_gated_quant(const MoeGemvArgs& a, cudaStream_t s);
void moe_gemv_down_quant(const MoeGemvArgs& a, cudaStream_t s);
// x[t, :] += sum_j weights[t*top_k + j] * y[row(t, j), :] + g_t * shared[t, :] for t < n, j in
// order 0..top_k-1 and the shared expert's term last (a fixed order: deterministic, no atomics);
// row(t, j) = rows[t*top_k + j], or t*top_k + j when rows is null. y is f32 [*, hidden].
// Qwen2-MoE / Qwen3.5-MoE's shared expert: `shared` f32 [n, hidden] is its output (null: no
// shared expert, the term is left out), g_t = sigmoid(shared_logit[t]) with shared_logit f32 [n]
// the shared_expert_gate's logits, or g_t = 1 when shared_logit is null (no gate).
void moe_combine(float* x, const float* y, const int32_t* rows, const float* weights, int n, int top_k, int hidden,
                 const float* shared, const float* shared_logit, cudaStream_t s);
// Prefill: dst[i, :] = src[idx[i], :] for i < m, rows of `cols` elements of dtype dt.
void gather_rows(const void* src, const int32_t* idx, int m, int cols, DType dt, void* dst, cudaStream_t s);

// ---- sampling.cu ----
// *out = argmax(x[0..n)) (lowest index among ties).
void argmax(const float* x, int n, int32_t* out, cudaStream_t s);
// out[r] = argmax(x[r*n .. (r+1)*n)) for each of rows rows (a batched step's greedy tokens).
void argmax_rows(const float* x, int rows, int n, int32_t* out, cudaStream_t s);

// ---- output_gate.cu ----  Qwen3.5's gated attention.
// q[t, h*hd + i] = qg[t, h*2hd + i] and gate[t, h*hd + i] = qg[t, h*2hd + hd + i]: q_proj's [q_h | gate_h]
// per head split into the query (rows ld_q apart) and the gate ([n, n_heads*head_dim], f32).
void split_query_gate(const float* qg, int ld_qg, int n, int n_heads, int head_dim, float* q, int ld_q, float* gate,
                      cudaStream_t s);
// x[t, c] *= sigmoid(gate[t, c]) for t < n, c < width (x in dt, rows ld apart): before o_proj.
void sigmoid_gate(void* x, DType dt, int ld, const float* gate, int n, int width, cudaStream_t s);

// ---- delta_net.cu ----  Qwen3.5's Gated DeltaNet mixer (linear attention) between its input
// projections and out_proj; cpu/delta_net.h is the reference and defines every step. Per token,
// from qkv ([q | k | v]: q, k [Hk, dk], v [Hv, dv]), z, a and b: the causal conv with SiLU
// (conv_state updated), q and k L2-normalised and q scaled by dk^-0.5, beta = sigmoid(b),
// g = -exp(A_log) * softplus(a + dt_bias), the gated delta rule on S (value head h reads q/k head
// h / (Hv/Hk)), then out = o * rsqrt(mean(o^2) + eps) * norm_w * silu(z) per value head.
struct DeltaNetArgs {
    const float* qkv;                        // [n, conv_dim], conv_dim = 2*Hk*dk + Hv*dv (in_proj_qkv)
    const float* z;                          // [n, Hv*dv] (in_proj_z)
    const float* a; const float* b;          // [n, Hv] (in_proj_a, in_proj_b)
    const void* conv_w;                      // [conv_dim, K] (wdt)
    const void* a_log; const void* dt_bias;  // [Hv] (wdt)
    const void* norm_w;                      // [dv] (wdt)
    DType wdt;
    float norm_eps;                          // rms_norm_eps
    float* state;                            // [Hv, dk, dv] f32, updated in place
    float* conv_state;                       // [conv_dim, K - 1] f32, oldest first, updated in place
    void* out; DType out_dt;                 // [n, Hv*dv]
    int n_k_heads, n_v_heads, k_head_dim, v_head_dim, conv_kernel;  // Hk, Hv, dk (<= 256), dv, K (2..4)
    int n;                                   // tokens (decode: 1)
    float* scratch;                          // delta_net_*_scratch_floats(...) floats
    int* arrivals;                           // decode: [Hk + Hv] ints, zero before the first launch (self-resetting)
};
// One token, one launch (the recurrent rule): no host synchronisation and nothing read from the
// host, so it can live in a CUDA graph; scratch (delta_net_decode_scratch_floats, in
// runtime/device_buffers.h) and arrivals may be shared by every layer. note:
// S is loaded before pdl_wait (launch.h), so the kernel just before this one must not write S.
void delta_net_decode(const DeltaNetArgs& a, cudaStream_t s);
// n tokens (the chunked rule, chunks of 64 tokens): four launches; n = 0 launches nothing.
// k_head_dim is bounded by the device's shared memory (128 fits; the call fails naming the sizes).
void delta_net_prefill(const DeltaNetArgs& a, cudaStream_t s);

}  // namespace tt::cuda
