// AVX2 + FMA + F16C row kernels (compiled with -mavx2 -mfma -mf16c; called only when cpuid has them).
#include "backends/host/gemv_kernels.h"
#include "backends/host/gemv_rows.h"

#include <immintrin.h>

#include <cstring>

namespace tt::host::detail {

namespace {
struct Avx2 {
    static constexpr int width = 8;
    static __m256 zero() { return _mm256_setzero_ps(); }
    static __m256 set1(float f) { return _mm256_set1_ps(f); }
    static void store(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
    static __m256 loadx(const float* p) { return _mm256_loadu_ps(p); }
    static __m256 fma(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
    // Eight weights widened to f32 (bf16: the top half of an f32).
    template <DType D>
    static __m256 load(const void* p) {
        if constexpr (D == DType::f32) return _mm256_loadu_ps(static_cast<const float*>(p));
        else if constexpr (D == DType::f16) return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p)));
        else if constexpr (D == DType::i8) return load_q8(static_cast<const uint8_t*>(p));
        else return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p))), 16));
    }
    static __m256 add(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
    // Eight INT8 weights widened to f32.
    static __m256 load_q8(const uint8_t* p) {
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
    }
    // Eight INT4 weights (four bytes, low nibble first) as f32 q = code - 8: the word in every
    // lane, shifted by 4 * lane.
    static constexpr int q4_cols = 8;
    static constexpr bool q4_split = false;
    static void load_q4(const uint8_t* p, __m256 (&out)[1]) {
        int32_t w;
        std::memcpy(&w, p, 4);
        const __m256i v = _mm256_srlv_epi32(_mm256_set1_epi32(w), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
        out[0] = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(v, _mm256_set1_epi32(15)), _mm256_set1_epi32(8)));
    }
    static float hsum(__m256 v) {
        const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
        return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
    }
};
}  // namespace

uint64_t sum_blocks_avx2(const uint8_t* p, size_t n_blocks) {
    const __m256i* v = reinterpret_cast<const __m256i*>(p);
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = 0; i < n_blocks; ++i, v += 8) {
        a0 = _mm256_add_epi64(a0, _mm256_load_si256(v));
        a1 = _mm256_add_epi64(a1, _mm256_load_si256(v + 1));
        a2 = _mm256_add_epi64(a2, _mm256_load_si256(v + 2));
        a3 = _mm256_add_epi64(a3, _mm256_load_si256(v + 3));
        a4 = _mm256_add_epi64(a4, _mm256_load_si256(v + 4));
        a5 = _mm256_add_epi64(a5, _mm256_load_si256(v + 5));
        a6 = _mm256_add_epi64(a6, _mm256_load_si256(v + 6));
        a7 = _mm256_add_epi64(a7, _mm256_load_si256(v + 7));
    }
    const __m256i s = _mm256_add_epi64(_mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)),
                                       _mm256_add_epi64(_mm256_add_epi64(a4, a5), _mm256_add_epi64(a6, a7)));
    alignas(32) uint64_t w[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(w), s);
    return w[0] ^ w[1] ^ w[2] ^ w[3];
}

void rows_avx2(const void* w, DType dt, int64_t cols, int64_t stride, const float* x, float* y, int64_t r0, int64_t r1,
               bool accumulate) {
    rows_for<Avx2>(w, dt, cols, stride, x, y, r0, r1, accumulate);
}

void qrows_avx2(const uint8_t* q, const float* scales, bool int4, int64_t group, int64_t cols, const float* x, float* y,
                int64_t r0, int64_t r1, bool accumulate) {
    qrows<Avx2>(q, scales, int4, group, cols, x, y, r0, r1, accumulate);
}

void weighted_sum_avx2(const void* w, DType dt, int64_t n_rows, int64_t cols, int64_t stride, const float* p, float* y) {
    weighted_sum_for<Avx2>(w, dt, n_rows, cols, stride, p, y);
}

}  // namespace tt::host::detail
