// The host decode path's matrix-vector product (issue #16: the CPU as a third place to run layers
// that do not fit VRAM). Unlike the readable reference (src/backends/cpu/), this one is built to
// read bf16/f16/f32 weights once at the host's memory bandwidth: AVX-512 or AVX2+FMA+F16C kernels
// chosen at run time, four rows per pass so each x vector is loaded once for four dot products,
// rows split over the thread pool. INT8/INT4 weights (core/quant.h) take AVX-512 or AVX2 kernels
// of their own; on CPUs with AVX-512 VNNI, INT4 rows are multiplied as bytes (gemv_vnni.cpp).
// The reference (cpu::linear) is the oracle it is tested against (tests/unit/test_host_gemv.cpp).
#pragma once

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "format/tensor.h"

namespace tt::host {

// avx512vnni: the avx512 kernels, but INT4 rows on VNNI's byte products.
enum class Isa { scalar, avx2, avx512, avx512vnni };
const char* isa_name(Isa isa);
// The widest kernel set this CPU runs (cpuid at the first call), or the one TT_HOST_ISA names.
Isa best_isa();
// Whether this CPU can run `isa`.
bool isa_supported(Isa isa);

// y[r] (+)= sum_c W[r, c] * x[c] for every row of W ([rows, cols], f32/f16/bf16, or INT8/INT4 with
// their scales, core/quant.h), x f32 [cols], y f32 [rows]; accumulate adds to y (the residual add).
// Parallel over rows; f32 accumulation.
void gemv(ThreadPool& pool, const TensorView& w, const float* x, float* y, bool accumulate, Isa isa = best_isa());

// The rows [r0, r1) of the same product on the calling thread (the kernel each worker runs).
void gemv_rows(const TensorView& w, const float* x, float* y, int64_t r0, int64_t r1, bool accumulate, Isa isa);

// The same kernels on rows `stride` elements apart, on the calling thread: attention over one
// head's slice of a KV cache ([position, kv_dim] rows of f32/f16/bf16, or i8: the 8-bit cache's
// values, whose per-row scales the caller applies; w points at the first row's slice).
// y[j] = W[j, 0:cols] . x for j < n_rows: the scores of cached keys.
void dot_rows(const void* w, DType dt, int64_t n_rows, int64_t cols, int64_t stride, const float* x, float* y,
              Isa isa = best_isa());
// y[c] += sum_j p[j] W[j, c] for c < cols, j < n_rows: the probability-weighted sum of cached values.
void weighted_row_sum(const void* w, DType dt, int64_t n_rows, int64_t cols, int64_t stride, const float* p, float* y,
                      Isa isa = best_isa());

}  // namespace tt::host
