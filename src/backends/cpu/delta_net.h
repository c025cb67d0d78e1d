// Gated DeltaNet, the linear-attention mixer of Qwen3.5 (transformers' Qwen3_5GatedDeltaNet in
// modeling_qwen3_5.py), as CPU reference operators: f32 throughout, weights already widened to
// f32 (they are small: the conv kernel, A_log, dt_bias, the norm). The CPU backend's DeltaNet
// layers are built from these, and the CUDA kernels are tested against them.
//
// Per token the layer's in_proj_qkv output is [q | k | v] with q, k: [Hk, dk] and v: [Hv, dv]
// (conv_dim = 2*Hk*dk + Hv*dv channels). Each q/k head serves Hv/Hk consecutive value heads
// (transformers' repeat_interleave): value head h reads q/k head h / (Hv/Hk). The recurrent state
// of a layer is S [Hv, dk, dv] f32 plus the causal conv's last K-1 inputs, conv_state
// [conv_dim, K-1] f32 (oldest first); both start at zero.
#pragma once

#include "model/model_spec.h"

#include <cstddef>

namespace tt {
class ThreadPool;
}

namespace tt::cpu {

// Hk, Hv, dk, dv, K: the model's DeltaNetSpec (model/model_spec.h).
using DeltaNetDims = DeltaNetSpec;

// y[t, c] = silu(sum_j w[c, j] * x'[t + j, c]) for t < n, where x' is conv_state's K-1 time steps
// (its columns) followed by x's n rows: the depthwise causal conv1d (no bias) with SiLU of causal_conv1d_fn /
// causal_conv1d_update. conv_state [conv_dim, K-1] is read, then replaced by the last K-1 inputs.
// x, y: [n, conv_dim] (distinct); w: [conv_dim, K].
void causal_conv1d_silu(const float* x, int n, const float* w, int conv_dim, int kernel, float* conv_state, float* y);

// In place on the conv output of n tokens, [n, conv_dim]: q and k of every head L2-normalised
// (x * rsqrt(sum x^2 + 1e-6), transformers' l2norm) and q scaled by dk^-0.5; v untouched.
void delta_net_qk_norm(const DeltaNetDims& d, float* qkv, int n);

// Per token and value head: beta = sigmoid(b), g = -exp(a_log) * softplus(a + dt_bias)
// (softplus as torch: x for x > 20). a, b: [n, Hv] (the in_proj_a / in_proj_b outputs);
// a_log, dt_bias: [Hv]; g, beta: [n, Hv] out.
void delta_net_gates(const float* a, const float* b, const float* a_log, const float* dt_bias, int n_v_heads, int n,
                     float* g, float* beta);

// The gated delta rule token by token (decode; transformers' torch_recurrent_gated_delta_rule;
// q arrives already scaled by delta_net_qk_norm):
// for each token and value head h, with q, k of its q/k head,
//   S = S * exp(g);  S += k (x) ((v - S^T k) * beta);  o = S^T q.
// qkv: [n, conv_dim] after delta_net_qk_norm; g, beta: [n, Hv]; state: [Hv, dk, dv] in/out;
// out: [n, Hv, dv]. Parallel over value heads when pool is not null.
void gated_delta_rule_recurrent(const DeltaNetDims& d, const float* qkv, const float* g, const float* beta, int n,
                                float* state, float* out, ThreadPool* pool);

// The same result by the chunked algorithm (prefill; transformers' torch_chunk_gated_delta_rule):
// chunks of `chunk` tokens (64 in transformers), within each the UT transform (a unit lower
// triangular solve) and the intra-chunk attention, the state carried from chunk to chunk, a last
// partial chunk for any remainder. Same arguments as gated_delta_rule_recurrent.
void gated_delta_rule_chunked(const DeltaNetDims& d, const float* qkv, const float* g, const float* beta, int n,
                              int chunk, float* state, float* out, ThreadPool* pool);

// y[i] = x[i] * rsqrt(mean(x^2) + eps) * w[i] * silu(z[i]) over n elements: the gated RMSNorm of
// the DeltaNet output (Qwen3_5RMSNormGated: plain w, not 1 + w). In place (y == x) allowed.
void gated_rmsnorm(const float* x, const float* z, const float* w, float eps, float* y, int n);

}  // namespace tt::cpu
