// AVX2 + FMA + F16C row kernels (compiled with -mavx2 -mfma -mf16c; called only when cpuid has them).
#include "backends/host/gemv_kernels.h"

#include "core/dtype.h"

#include <immintrin.h>

namespace tt::host::detail {

namespace {

template <DType D>
constexpr size_t sizeof_dtype() { return D == DType::f32 ? 4 : 2; }

// Eight weights widened to f32.
template <DType D>
inline __m256 load8(const void* p) {
    if constexpr (D == DType::f32) return _mm256_loadu_ps(static_cast<const float*>(p));
    else if constexpr (D == DType::f16) return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p)));
    else return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p))), 16));
}

inline float hsum(__m256 v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

// The columns past the last full vector, one at a time.
template <DType D>
inline float tail(const uint8_t* row, int64_t c0, int64_t cols, const float* x) {
    float acc = 0;
    for (int64_t c = c0; c < cols; ++c) {
        float v;
        to_f32(row + uint64_t(c) * sizeof_dtype<D>(), D, &v, 1);
        acc += v * x[c];
    }
    return acc;
}

template <DType D>
void rows(const void* w, int64_t cols, const float* x, float* y, int64_t r0, int64_t r1, bool accumulate) {
    constexpr size_t es = sizeof_dtype<D>();
    const uint8_t* base = static_cast<const uint8_t*>(w);
    const int64_t full = cols / 8 * 8;
    int64_t r = r0;
    // Four rows per pass: each x vector is loaded once for four products.
    for (; r + 4 <= r1; r += 4) {
        const uint8_t* p[4];
        for (int i = 0; i < 4; ++i) p[i] = base + uint64_t((r + i) * cols) * es;
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
        for (int64_t c = 0; c < full; c += 8) {
            const __m256 xv = _mm256_loadu_ps(x + c);
            a0 = _mm256_fmadd_ps(load8<D>(p[0] + uint64_t(c) * es), xv, a0);
            a1 = _mm256_fmadd_ps(load8<D>(p[1] + uint64_t(c) * es), xv, a1);
            a2 = _mm256_fmadd_ps(load8<D>(p[2] + uint64_t(c) * es), xv, a2);
            a3 = _mm256_fmadd_ps(load8<D>(p[3] + uint64_t(c) * es), xv, a3);
        }
        const float s[4] = {hsum(a0), hsum(a1), hsum(a2), hsum(a3)};
        for (int i = 0; i < 4; ++i) {
            const float v = s[i] + tail<D>(p[i], full, cols, x);
            y[r + i - r0] = (accumulate ? y[r + i - r0] : 0.0f) + v;
        }
    }
    for (; r < r1; ++r) {
        const uint8_t* p = base + uint64_t(r * cols) * es;
        __m256 a = _mm256_setzero_ps();
        for (int64_t c = 0; c < full; c += 8) a = _mm256_fmadd_ps(load8<D>(p + uint64_t(c) * es), _mm256_loadu_ps(x + c), a);
        const float v = hsum(a) + tail<D>(p, full, cols, x);
        y[r - r0] = (accumulate ? y[r - r0] : 0.0f) + v;
    }
}

}  // namespace

void rows_avx2(const void* w, DType dt, int64_t cols, const float* x, float* y, int64_t r0, int64_t r1, bool accumulate) {
    switch (dt) {
    case DType::f32: rows<DType::f32>(w, cols, x, y, r0, r1, accumulate); break;
    case DType::f16: rows<DType::f16>(w, cols, x, y, r0, r1, accumulate); break;
    default: rows<DType::bf16>(w, cols, x, y, r0, r1, accumulate); break;
    }
}

}  // namespace tt::host::detail
