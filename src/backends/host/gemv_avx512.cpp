// AVX-512 (F, BW) row kernels (compiled with -mavx512f -mavx512bw; called only when cpuid has them).
#include "backends/host/gemv_kernels.h"

#include "core/dtype.h"

// note: GCC 12's AVX-512 intrinsics (their _mm512_undefined_* operands) trip -Wmaybe-uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

namespace tt::host::detail {

namespace {

template <DType D>
constexpr size_t sizeof_dtype() { return D == DType::f32 ? 4 : 2; }

// Sixteen weights widened to f32.
template <DType D>
inline __m512 load16(const void* p) {
    if constexpr (D == DType::f32) return _mm512_loadu_ps(static_cast<const float*>(p));
    else if constexpr (D == DType::f16) return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
    else return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(static_cast<const __m256i*>(p))), 16));
}

inline float hsum(__m512 v) { return _mm512_reduce_add_ps(v); }

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
    const int64_t full = cols / 16 * 16;
    int64_t r = r0;
    // Four rows per pass: each x vector is loaded once for four products.
    for (; r + 4 <= r1; r += 4) {
        const uint8_t* p[4];
        for (int i = 0; i < 4; ++i) p[i] = base + uint64_t((r + i) * cols) * es;
        __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
        for (int64_t c = 0; c < full; c += 16) {
            const __m512 xv = _mm512_loadu_ps(x + c);
            a0 = _mm512_fmadd_ps(load16<D>(p[0] + uint64_t(c) * es), xv, a0);
            a1 = _mm512_fmadd_ps(load16<D>(p[1] + uint64_t(c) * es), xv, a1);
            a2 = _mm512_fmadd_ps(load16<D>(p[2] + uint64_t(c) * es), xv, a2);
            a3 = _mm512_fmadd_ps(load16<D>(p[3] + uint64_t(c) * es), xv, a3);
        }
        const float s[4] = {hsum(a0), hsum(a1), hsum(a2), hsum(a3)};
        for (int i = 0; i < 4; ++i) {
            const float v = s[i] + tail<D>(p[i], full, cols, x);
            y[r + i - r0] = (accumulate ? y[r + i - r0] : 0.0f) + v;
        }
    }
    for (; r < r1; ++r) {
        const uint8_t* p = base + uint64_t(r * cols) * es;
        __m512 a = _mm512_setzero_ps();
        for (int64_t c = 0; c < full; c += 16) a = _mm512_fmadd_ps(load16<D>(p + uint64_t(c) * es), _mm512_loadu_ps(x + c), a);
        const float v = hsum(a) + tail<D>(p, full, cols, x);
        y[r - r0] = (accumulate ? y[r - r0] : 0.0f) + v;
    }
}

}  // namespace

void rows_avx512(const void* w, DType dt, int64_t cols, const float* x, float* y, int64_t r0, int64_t r1, bool accumulate) {
    switch (dt) {
    case DType::f32: rows<DType::f32>(w, cols, x, y, r0, r1, accumulate); break;
    case DType::f16: rows<DType::f16>(w, cols, x, y, r0, r1, accumulate); break;
    default: rows<DType::bf16>(w, cols, x, y, r0, r1, accumulate); break;
    }
}

}  // namespace tt::host::detail
