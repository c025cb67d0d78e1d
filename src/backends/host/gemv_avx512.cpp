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
        else if constexpr (D == DType::i8) return load_q8(static_cast<const uint8_t*>(p));
        else return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(static_cast<const __m256i*>(p))), 16));
    }
    static float hsum(__m512 v) { return _mm512_reduce_add_ps(v); }
    // Sixteen INT8 weights widened to f32.
    static __m512 load_q8(const uint8_t* p) {
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    }
    // Thirty-two INT4 weights (sixteen bytes, column 2j in byte j's low nibble) as f32 q = code - 8,
    // the even columns in out[0] and the odd ones in out[1] (q4_split: qrows hands the kernel x in
    // that order): byte j zero-extended into lane j, its nibbles looked up in a 16-entry table of
    // q (vpermps reads an index's low 4 bits, so the low nibble needs no mask). A zero-extension
    // and a shift per 32 weights and a lookup per 16, where widening them in column order took
    // seven instructions per 16 and the AVX2 kernel's shifted broadcast takes twelve
    // (docs/QUANTIZATION.md has the timings).
    static constexpr int q4_cols = 32;
    static constexpr bool q4_split = true;
    static void load_q4(const uint8_t* p, __m512 (&out)[2]) {
        const __m512 q = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
        const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        out[0] = _mm512_permutexvar_ps(b, q);
        out[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), q);
    }
};
}  // namespace

uint64_t sum_blocks_avx512(const uint8_t* p, size_t n_blocks) {
    const __m512i* v = reinterpret_cast<const __m512i*>(p);
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < n_blocks; ++i, v += 4) {
        a0 = _mm512_add_epi64(a0, _mm512_load_si512(v));
        a1 = _mm512_add_epi64(a1, _mm512_load_si512(v + 1));
        a2 = _mm512_add_epi64(a2, _mm512_load_si512(v + 2));
        a3 = _mm512_add_epi64(a3, _mm512_load_si512(v + 3));
    }
    // note: stored and folded by hand: GCC 12's _mm512_reduce_add_epi64 trips -Wuninitialized.
    alignas(64) uint64_t w[8];
    _mm512_store_si512(w, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
    return w[0] ^ w[1] ^ w[2] ^ w[3] ^ w[4] ^ w[5] ^ w[6] ^ w[7];
}

void rows_avx512(const void* w, DType dt, int64_t cols, int64_t stride, const float* x, float* y, int64_t r0, int64_t r1,
                 bool accumulate) {
    rows_for<Avx512>(w, dt, cols, stride, x, y, r0, r1, accumulate);
}

void qrows_avx512(const uint8_t* q, const float* scales, bool int4, int64_t group, int64_t cols, const float* x, float* y,
                  int64_t r0, int64_t r1, bool accumulate) {
    qrows<Avx512>(q, scales, int4, group, cols, x, y, r0, r1, accumulate);
}

void weighted_sum_avx512(const void* w, DType dt, int64_t n_rows, int64_t cols, int64_t stride, const float* p, float* y) {
    weighted_sum_for<Avx512>(w, dt, n_rows, cols, stride, p, y);
}

}  // namespace tt::host::detail
