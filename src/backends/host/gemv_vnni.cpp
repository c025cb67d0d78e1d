// INT4 rows on AVX-512 VNNI (compiled with -mavx512f -mavx512bw -mavx512vnni; called only when
// cpuid has them). The f32 kernel (gemv_rows.h) widens every weight to a float before its FMA: a
// zero-extension, a shift and two table lookups per 32 weights, all but the shift on one port, so
// it computed ~9 GB/s of INT4 rows a core on the CI VM, below the memory's read rate with two
// cores. Here the weights stay bytes: vpdpbusd multiplies 64 codes (0..15, unsigned) by 64 signed
// bytes and adds them up in fours, and x becomes those bytes.
//
// x, once per new x (prepared_for), per block of 128 columns (one 64-byte line of codes):
// X = round(x * 2^(20-E)) with max|x| < 2^E in the block, an integer of magnitude at most 2^20,
// written in three signed base-128 digits X = d0 * 2^14 + d1 * 2^7 + d2 (d1, d2 in [-64, 63],
// |d0| <= 64: each a signed byte). A code's products with the digits are exact integers, and so are a lane's sums over its
// eight columns (below 2^28 with the correction below). The roundings are X's (2^-21 of the
// block's largest |x|; the CUDA GEMV's four base-256 digits hold x to 2^-30 of the vector's
// largest, quant.cu), then, as in the f32 kernel, the lane sum's conversion to f32 and the f32
// accumulation. q = code - 8 is taken care of by adding -8 * sum(X) over each lane's columns,
// also exact.
//
// A lane of the 64-byte line holds bytes 4L..4L+3: columns 8L, 8L+2, 8L+4, 8L+6 in their low
// nibbles and 8L+1, ... in their high ones, so the digits are stored the same way (even columns'
// in one vector, odd columns' in another) and the lane's eight columns lie in one group of
// 32/64/128: its integer sum is scaled by that group's scale times 2^(E-20) and added in f32.
#include "backends/host/gemv_kernels.h"
#include "backends/host/gemv_rows.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

// note: GCC 12's AVX-512 intrinsics (their _mm512_undefined_* operands) trip -Wmaybe-uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

namespace tt::host::detail {

namespace {

constexpr int64_t k_block_cols = 128;  // columns per 64-byte line of codes

// x as the kernel reads it, per block: the digit vectors d0 even, d0 odd, d1 even, d1 odd, d2
// even, d2 odd (byte j of "even": column 2j of the block, of "odd": 2j + 1); the correction
// -8 * sum(X) of each lane's eight columns; and 2^(E-20).
struct alignas(64) Line {
    int8_t bytes[64];
};
struct PreparedX {
    std::vector<Line> digits;     // 6 per block
    std::vector<Line> corr;       // 1 per block: 16 int32
    std::vector<float> unscale;   // 1 per block
    std::vector<float> from;      // the x it was made from (prepared_for)
    bool finite = false;          // prepare's answer for it
};
__m512i load(const Line& l) { return _mm512_load_si512(l.bytes); }

// Fills p from x[0:cols] (the last block zero-padded). False when x holds an infinity or a NaN,
// which no integer can carry: the caller then takes the f32 kernel, whose sums propagate them.
bool prepare(const float* x, int64_t cols, PreparedX& p) {
    const int64_t n_blocks = (cols + k_block_cols - 1) / k_block_cols;
    p.digits.resize(size_t(6 * n_blocks));
    p.corr.resize(size_t(n_blocks));
    p.unscale.resize(size_t(n_blocks));
    const __m512 huge = _mm512_set1_ps(3.4028235e38f);
    // Even / odd lanes of two vectors of 16 columns: the 16 even, then the 16 odd columns.
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const __m512i c64 = _mm512_set1_epi32(64), c127 = _mm512_set1_epi32(127);
    const __m512i ones = _mm512_set1_epi8(1);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const int64_t c0 = b * k_block_cols, n = std::min(k_block_cols, cols - c0);
        __m512 v[8];
        __m512 mx = _mm512_setzero_ps();
        __mmask16 bad = 0;
        for (int k = 0; k < 8; ++k) {
            const int64_t left = n - 16 * k;
            const __mmask16 m = left >= 16 ? __mmask16(0xFFFF) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
            v[k] = _mm512_maskz_loadu_ps(m, x + c0 + 16 * k);
            const __m512 a = _mm512_abs_ps(v[k]);
            bad |= _mm512_cmp_ps_mask(a, huge, _CMP_NLE_UQ);  // NaN or infinity
            mx = _mm512_max_ps(mx, a);
        }
        if (bad) return false;
        int E = 0;
        std::frexp(_mm512_reduce_max_ps(mx), &E);  // max|x| < 2^E (E = 0 for an all-zero block)
        E = std::max(E, -100);  // (2^(20-E) stays a normal float; smaller x rounds to 0)
        const __m512 up = _mm512_set1_ps(float(20 - E));
        p.unscale[size_t(b)] = std::ldexp(1.0f, E - 20);
        Line* d = &p.digits[size_t(6 * b)];
        for (int pair = 0; pair < 4; ++pair) {  // columns 32 pair .. + 31: bytes 16 pair .. + 15 of each digit vector
            const __m512i x0 = _mm512_cvtps_epi32(_mm512_scalef_ps(v[2 * pair], up));
            const __m512i x1 = _mm512_cvtps_epi32(_mm512_scalef_ps(v[2 * pair + 1], up));
            const __m512i halves[2] = {_mm512_permutex2var_epi32(x0, even, x1), _mm512_permutex2var_epi32(x0, odd, x1)};
            for (int h = 0; h < 2; ++h) {
                const __m512i X = halves[h];
                const __m512i d2 = _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(X, c64), c127), c64);
                const __m512i X1 = _mm512_srai_epi32(_mm512_sub_epi32(X, d2), 7);
                const __m512i d1 = _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(X1, c64), c127), c64);
                const __m512i d0 = _mm512_srai_epi32(_mm512_sub_epi32(X1, d1), 7);
                const __m512i digit[3] = {d0, d1, d2};
                for (int k = 0; k < 3; ++k)
                    _mm_store_si128(reinterpret_cast<__m128i*>(d[2 * k + h].bytes + 16 * pair), _mm512_cvtepi32_epi8(digit[k]));
            }
        }
        // sum(X) over each lane's eight columns, by the same instruction: a lane of ones times
        // each digit vector, weighted 2^14, 2^7, 1; times -8.
        __m512i s[3];
        for (int k = 0; k < 3; ++k)
            s[k] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, load(d[2 * k])), ones, load(d[2 * k + 1]));
        const __m512i corr =
            _mm512_sub_epi32(_mm512_setzero_si512(),
                             _mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(s[0], 17), _mm512_slli_epi32(s[1], 10)), _mm512_slli_epi32(s[2], 3)));
        _mm512_store_si512(p.corr[size_t(b)].bytes, corr);
    }
    return true;
}

// prepare(x, cols, p), unless p was made from the same x: q, k and v (and gate and up) read one x,
// each call on each thread, and preparing 4096 columns costs ~2 us (a 4-row GEMV took 3 us
// against the f32 kernel's 1 on the CI VM). The copy is compared, not the pointer: a layer's
// buffers hold a new x at the same address.
bool prepared_for(const float* x, int64_t cols, PreparedX& p) {
    const size_t bytes = size_t(cols) * sizeof(float);
    if (p.from.size() == size_t(cols) && std::memcmp(p.from.data(), x, bytes) == 0) return p.finite;
    p.from.assign(x, x + cols);
    p.finite = prepare(x, cols, p);
    return p.finite;
}

// R rows' dot products with the prepared x; p[i] / s[i]: row i's codes and scales. ahead: bytes
// between a row and the one a later pass reads at the same column (prefetched as in gemv_rows.h).
template <int R>
void pass(const uint8_t* const (&p)[R], const float* const (&s)[R], int64_t group, int64_t cols, const PreparedX& px,
          int64_t ahead, float (&out)[R]) {
    const __m512i nib = _mm512_set1_epi8(15);
    // Lane L's first column is 8L of the block: its group is 8L / group of the block's groups.
    const __m512i lane_group = _mm512_srli_epi32(_mm512_slli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 3),
                                                 __builtin_ctzll(uint64_t(group)));
    const int64_t groups_per_block = k_block_cols / group, n_blocks = (cols + k_block_cols - 1) / k_block_cols;
    __m512 acc[R];
    for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
        const int64_t n = std::min(k_block_cols, cols - b * k_block_cols);
        // A partial last block (cols % 128 = 32, 64 or 96): its missing codes load as 0 against
        // zero digits, its missing scales as 0.
        const __mmask64 wmask = n == k_block_cols ? ~__mmask64(0) : (__mmask64(1) << (n / 2)) - 1;
        const __mmask16 smask = __mmask16((1u << (n / group)) - 1);
        const Line* dl = &px.digits[size_t(6 * b)];
        const __m512i d[6] = {load(dl[0]), load(dl[1]), load(dl[2]), load(dl[3]), load(dl[4]), load(dl[5])};
        const __m512i corr = load(px.corr[size_t(b)]);
        const __m512 unscale = _mm512_set1_ps(px.unscale[size_t(b)]);
        for (int i = 0; i < R; ++i) __builtin_prefetch(p[i] + 64 * b + ahead);
        for (int i = 0; i < R; ++i) {
            const __m512i w = _mm512_maskz_loadu_epi8(wmask, p[i] + 64 * b);
            const __m512i lo = _mm512_and_si512(w, nib), hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), nib);
            const __m512i a0 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, d[0]), hi, d[1]);
            const __m512i a1 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, d[2]), hi, d[3]);
            const __m512i a2 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(corr, lo, d[4]), hi, d[5]);
            const __m512i a = _mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(a0, 14), _mm512_slli_epi32(a1, 7)), a2);
            const __m512 sc = _mm512_permutexvar_ps(lane_group, _mm512_maskz_loadu_ps(smask, s[i] + b * groups_per_block));
            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a), _mm512_mul_ps(sc, unscale), acc[i]);
        }
    }
    for (int i = 0; i < R; ++i) out[i] = _mm512_reduce_add_ps(acc[i]);
}

// The rows one pass ahead are requested as each is read (gemv_rows.h requests two: its widening is
// slower). On the CI VM at 2 threads, 4096 x 4096: 0.427-0.442 ms one pass ahead, 0.446-0.474 two,
// 0.43-0.45 with the scales requested too; 14336 x 4096: 1.52 ms one pass ahead, 2.68 with none.
constexpr int k_vnni_prefetch_passes = 1;

}  // namespace

void qrows_int4_vnni(const uint8_t* q, const float* scales, int64_t group, int64_t cols, const float* x, float* y, int64_t r0,
                     int64_t r1, bool accumulate) {
    static thread_local PreparedX px;
    if (!prepared_for(x, cols, px)) return qrows_avx512(q, scales, true, group, cols, x, y, r0, r1, accumulate);
    quant_row_passes(q, scales, uint64_t(cols / 2), cols / group, k_vnni_prefetch_passes, y, r0, r1, accumulate,
                     [&]<int R>(const uint8_t* const (&p)[R], const float* const (&s)[R], int64_t ahead, float (&out)[R]) {
                         pass<R>(p, s, group, cols, px, ahead, out);
                     });
}

}  // namespace tt::host::detail
