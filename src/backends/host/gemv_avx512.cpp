// AVX-512 (F, BW) row kernels (compiled with -mavx512f -mavx512bw; called only when cpuid has them).
#include "backends/host/gemv_kernels.h"
#include "backends/host/gemv_rows.h"

// note: GCC 12's AVX-512 intrinsics (their _mm512_undefined_* operands) trip -Wmaybe-uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

namespace tt::host::detail {

namespace {
struct Avx512 {
    static constexpr int width = 16;
    static __m512 zero() { return _mm512_setzero_ps(); }
    static __m512 set1(float f) { return _mm512_set1_ps(f); }
    static void store(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
    static __m512 loadx(const float* p) { return _mm512_loadu_ps(p); }
    static __m512 fma(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
    // Sixteen weights widened to f32 (bf16: the top half of an f32).
    template <DType D>
    static __m512 load(const void* p) {
        if constexpr (D == DType::f32) return _mm512_loadu_ps(static_cast<const float*>(p));
        else if constexpr (D == DType::f16) return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
        else return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(static_cast<const __m256i*>(p))), 16));
    }
    static float hsum(__m512 v) { return _mm512_reduce_add_ps(v); }
};
}  // namespace

void rows_avx512(const void* w, DType dt, int64_t cols, int64_t stride, const float* x, float* y, int64_t r0, int64_t r1,
                 bool accumulate) {
    rows_for<Avx512>(w, dt, cols, stride, x, y, r0, r1, accumulate);
}

void weighted_sum_avx512(const void* w, DType dt, int64_t n_rows, int64_t cols, int64_t stride, const float* p, float* y) {
    weighted_sum_for<Avx512>(w, dt, n_rows, cols, stride, p, y);
}

}  // namespace tt::host::detail
