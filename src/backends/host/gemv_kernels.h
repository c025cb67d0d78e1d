// The per-ISA row kernels behind host/gemv.h, each in a file compiled for its instruction set
// (CMakeLists.txt sets the flags per file), so the rest of the build stays baseline x86-64.
#pragma once

#include "core/dtype.h"

#include <cstdint>

namespace tt::host::detail {

// y[r - r0] (+)= W[r, :] . x for r in [r0, r1); w points at row 0 of a [*, cols] matrix of dtype dt.
void rows_avx2(const void* w, DType dt, int64_t cols, const float* x, float* y, int64_t r0, int64_t r1, bool accumulate);
void rows_avx512(const void* w, DType dt, int64_t cols, const float* x, float* y, int64_t r0, int64_t r1, bool accumulate);

}  // namespace tt::host::detail
