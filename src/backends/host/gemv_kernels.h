// The per-ISA row kernels behind host/gemv.h, each in a file compiled for its instruction set
// (CMakeLists.txt sets the flags per file), so the rest of the build stays baseline x86-64.
#pragma once

#include "core/dtype.h"

#include <cstdint>

namespace tt::host::detail {

// y[r - r0] (+)= W[r, 0:cols] . x for r in [r0, r1); w points at row 0 of a matrix of dtype dt whose
// rows are `stride` elements apart.
void rows_avx2(const void* w, DType dt, int64_t cols, int64_t stride, const float* x, float* y, int64_t r0, int64_t r1,
               bool accumulate);
void rows_avx512(const void* w, DType dt, int64_t cols, int64_t stride, const float* x, float* y, int64_t r0, int64_t r1,
                 bool accumulate);
// The same over quantized rows (INT8, or INT4 when int4, in groups of `group`; gemv_rows.h).
void qrows_avx2(const uint8_t* q, const float* scales, bool int4, int64_t group, int64_t cols, const float* x, float* y,
                int64_t r0, int64_t r1, bool accumulate);
void qrows_avx512(const uint8_t* q, const float* scales, bool int4, int64_t group, int64_t cols, const float* x, float* y,
                  int64_t r0, int64_t r1, bool accumulate);
// INT4 rows on AVX-512 VNNI (gemv_vnni.cpp): x in three signed base-128 digits per column, the
// codes multiplied by them as bytes.
void qrows_int4_vnni(const uint8_t* q, const float* scales, int64_t group, int64_t cols, const float* x, float* y, int64_t r0,
                     int64_t r1, bool accumulate);
// y[c] += sum_j p[j] W[j, c] for c < cols, j < n_rows (rows `stride` elements apart).
void weighted_sum_avx2(const void* w, DType dt, int64_t n_rows, int64_t cols, int64_t stride, const float* p, float* y);
void weighted_sum_avx512(const void* w, DType dt, int64_t n_rows, int64_t cols, int64_t stride, const float* p, float* y);

// A fold of the 64-bit words of n_blocks 256-byte blocks at p (64-byte aligned): the memory-read
// measurement's loop (host/measure.h), with loads as wide as the GEMV's. Measured on a 2-core
// Xeon VM, one thread: 10 GB/s with 16-byte loads, 13 with 32, 16 with 64.
uint64_t sum_blocks_avx2(const uint8_t* p, size_t n_blocks);
uint64_t sum_blocks_avx512(const uint8_t* p, size_t n_blocks);

}  // namespace tt::host::detail
