// The CPU reference operators, f32 accumulation throughout. The CPU backend's forward pass is built
// from these, and the CUDA kernels are tested against them (tests/gpu/). Weights arrive in their
// stored dtype (f32/f16/bf16), or quantized (INT8/INT4, core/quant.h), and are widened (dequantized)
// row by row as they are read.
#pragma once

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "format/tensor.h"
#include "runtime/rope.h"

#include <cstddef>

namespace tt::cpu {

// y[t, r] = sum_c x[t, c] * W[r, c] (+ b[r]) for t < n_tokens, r < rows: PyTorch's F.linear.
// W is [rows, cols] in its stored dtype; b may be null. Parallel over rows.
void linear(ThreadPool& pool, const float* x, int n_tokens, const TensorView& w, const TensorView* b, float* y);

// y = x / sqrt(mean(x^2) + eps) * (w + weight_offset), over n elements (in place allowed).
void rmsnorm(const float* x, const TensorView& w, float weight_offset, float eps, float* y, int n);
// Same, with an f32 weight vector (used for tests and when weights were widened already).
void rmsnorm_f32(const float* x, const float* w, float weight_offset, float eps, float* y, int n);
// y = x / sqrt(mean(x^2) + eps), no weight (Gemma 4's v_norm: Gemma4RMSNorm(with_scale=False)).
void rmsnorm_unweighted(const float* x, float eps, float* y, int n);

float silu(float x);
float gelu_tanh(float x);

// Reads one row of a [rows, cols] tensor as f32 (dequantized when the tensor is quantized).
void read_row(const TensorView& t, int64_t row, float* out);

// Causal attention for one query head at position q_pos over cached keys/values.
// k, v: [n_ctx, kv_stride] f32 rows, this head's slice at offset kv_offset; keys visible are
// positions [first, q_pos]. scores scratch must hold q_pos + 1 floats.
void attend_head(const float* q, const float* k, const float* v, int kv_stride, int kv_offset, int head_dim,
                 int first, int q_pos, float scale, float softcap, float* scores, float* out);

}  // namespace tt::cpu
