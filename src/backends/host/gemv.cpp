#include "backends/host/gemv.h"

#include "backends/host/gemv_kernels.h"
#include "core/dtype.h"
#include "core/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace tt::host {

const char* isa_name(Isa isa) {
    switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    }
    return "?";
}

namespace {
#if defined(__x86_64__)
// F16C from cpuid leaf 1 (ecx bit 29): clang's __builtin_cpu_supports does not know "f16c".
bool has_f16c() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
}
#endif
}  // namespace

bool isa_supported(Isa isa) {
#if defined(__x86_64__)
    switch (isa) {
    case Isa::scalar: return true;
    case Isa::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    case Isa::avx512: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    }
    return false;
#else
    return isa == Isa::scalar;
#endif
}

Isa best_isa() {
    static const Isa best = isa_supported(Isa::avx512) ? Isa::avx512 : isa_supported(Isa::avx2) ? Isa::avx2 : Isa::scalar;
    return best;
}

namespace {
void rows_scalar(const TensorView& w, const float* x, float* y, int64_t r0, int64_t r1, bool accumulate) {
    const int64_t cols = w.shape[1];
    const size_t es = dtype_size(w.dtype);
    for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* row = w.data + uint64_t(r * cols) * es;
        float acc = 0;
        for (int64_t c = 0; c < cols; ++c) {
            float v;
            to_f32(row + uint64_t(c) * es, w.dtype, &v, 1);
            acc += v * x[c];
        }
        y[r] = (accumulate ? y[r] : 0.0f) + acc;
    }
}
}  // namespace

void gemv_rows(const TensorView& w, const float* x, float* y, int64_t r0, int64_t r1, bool accumulate, Isa isa) {
    TT_ASSERT(w.shape.size() == 2 && (w.dtype == DType::f32 || w.dtype == DType::f16 || w.dtype == DType::bf16));
    TT_ASSERT(isa_supported(isa), "{} kernels on a CPU without them", isa_name(isa));
    switch (isa) {
    case Isa::scalar: rows_scalar(w, x, y, r0, r1, accumulate); return;
    case Isa::avx2: detail::rows_avx2(w.data, w.dtype, w.shape[1], x, y + r0, r0, r1, accumulate); return;
    case Isa::avx512: detail::rows_avx512(w.data, w.dtype, w.shape[1], x, y + r0, r0, r1, accumulate); return;
    }
}

void gemv(ThreadPool& pool, const TensorView& w, const float* x, float* y, bool accumulate, Isa isa) {
    const int64_t rows = w.shape[0];
    // note: below ~64k weights the pool's wake-up costs more than the work.
    if (rows * w.shape[1] < (int64_t(1) << 16)) return gemv_rows(w, x, y, 0, rows, accumulate, isa);
    // Blocks of 16 rows (a multiple of the kernels' 4) keep each worker's rows contiguous.
    const size_t blocks = size_t((rows + 15) / 16);
    pool.parallel_for(blocks, [&](size_t b0, size_t b1) {
        gemv_rows(w, x, y, int64_t(b0) * 16, std::min(rows, int64_t(b1) * 16), accumulate, isa);
    });
}

}  // namespace tt::host
