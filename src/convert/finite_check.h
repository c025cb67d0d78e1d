// The converter's check that every weight is a finite number, before and after the cast: NaN or
// Inf in a checkpoint (a diverged fine-tune, a broken export) would otherwise convert silently and
// run as garbage, and so would a finite f32/bf16 value too large for the requested --dtype (f16
// tops out at 65504), which the cast turns into Inf.
#pragma once

#include "core/dtype.h"
#include "core/thread_pool.h"

#include <cstdint>

namespace tt {

struct FiniteReport {
    uint64_t n_nonfinite = 0;     // NaN or +-Inf in the source
    uint64_t n_overflow = 0;      // finite in the source, +-Inf once cast to the target dtype
    uint64_t first = UINT64_MAX;  // index of the first bad element (of either kind)
    float first_value = 0;        // its value, widened to f32 (NaN, +-inf, or the too-large value)
    bool ok() const { return n_nonfinite == 0 && n_overflow == 0; }
};

// Scans n elements of float dtype `src` that will be stored as `dst`. Integer-only bit tests,
// spread over `pool` for large tensors: a pass over bytes that are about to be read by the cast
// anyway, so they are hot in the page cache when the writer reads them.
FiniteReport check_finite(const void* data, DType src, DType dst, uint64_t n, ThreadPool& pool);

}  // namespace tt
