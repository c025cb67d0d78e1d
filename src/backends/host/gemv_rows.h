// The row loop of the host GEMV for one vector instruction set, included only by the per-ISA
// files (gemv_avx2.cpp, gemv_avx512.cpp, gemv_vnni.cpp: its quant_row_passes), each compiled with
// its own -m flags. V supplies the vector type and its operations: width, zero(), load<D>(p) (W weights, or INT8 values, widened to f32), loadx(p),
// set1(f), store(p, v), fma(a, b, c) and hsum(v). Rows are `stride` elements apart: cols for a
// weight matrix, kv_dim for one head's slice of a KV cache.
//
// note: everything here sits in an anonymous namespace on purpose: each ISA file gets its own
// internal copy, so the linker can never hand an AVX-512 instantiation to a caller on an AVX2 CPU.
#pragma once

#include "core/dtype.h"

#include <cstdint>
#include <vector>

namespace tt::host::detail {
namespace {

// D: f32, f16, bf16, or i8 (the 8-bit KV cache's rows: the values alone, the caller scales).
template <DType D>
constexpr size_t weight_size() { return D == DType::f32 ? 4 : D == DType::i8 ? 1 : 2; }

template <DType D>
float element(const uint8_t* p) {
    if constexpr (D == DType::i8) return float(int8_t(*p));
    float v;
    to_f32(p, D, &v, 1);
    return v;
}

// The columns past the last full vector, one at a time.
template <DType D>
float tail(const uint8_t* row, int64_t c0, int64_t cols, const float* x) {
    float acc = 0;
    for (int64_t c = c0; c < cols; ++c) acc += element<D>(row + uint64_t(c) * weight_size<D>()) * x[c];
    return acc;
}

// Short rows (at most k_short_row bytes: a KV cache's head slices, 64-256 bytes each, kv_dim
// apart) are pulled into the cache k_rows_ahead rows before they are read: the CPU's prefetchers
// do not run ahead of such a stride, and attention at depth waited on each row's lines (perf on
// the CI VM: the host path's dot and weighted-sum loops, not their arithmetic). Long rows (weight
// matrices) are streams the prefetchers follow.
constexpr int64_t k_short_row = 512, k_rows_ahead = 16;
inline void prefetch_row(const uint8_t* row, int64_t bytes) {
    for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(row + b);  // (a prefetch past the cache's end does not fault)
}

template <typename V, DType D>
void rows(const void* w, int64_t cols, int64_t stride, const float* x, float* y, int64_t r0, int64_t r1, bool accumulate) {
    constexpr size_t es = weight_size<D>();
    constexpr int64_t width = V::width;
    const uint8_t* base = static_cast<const uint8_t*>(w);
    const int64_t full = cols / width * width, row_bytes = cols * int64_t(es);
    const bool ahead = row_bytes <= k_short_row;
    int64_t r = r0;
    // Four rows per pass: each x vector is loaded once for four products.
    for (; r + 4 <= r1; r += 4) {
        const uint8_t* p[4];
        for (int i = 0; i < 4; ++i) p[i] = base + uint64_t((r + i) * stride) * es;
        if (ahead)
            for (int i = 0; i < 4; ++i) prefetch_row(p[i] + uint64_t(k_rows_ahead * stride) * es, row_bytes);
        auto a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
        for (int64_t c = 0; c < full; c += width) {
            const auto xv = V::loadx(x + c);
            a0 = V::fma(V::template load<D>(p[0] + uint64_t(c) * es), xv, a0);
            a1 = V::fma(V::template load<D>(p[1] + uint64_t(c) * es), xv, a1);
            a2 = V::fma(V::template load<D>(p[2] + uint64_t(c) * es), xv, a2);
            a3 = V::fma(V::template load<D>(p[3] + uint64_t(c) * es), xv, a3);
        }
        const float s[4] = {V::hsum(a0), V::hsum(a1), V::hsum(a2), V::hsum(a3)};
        for (int i = 0; i < 4; ++i) {
            const float v = s[i] + tail<D>(p[i], full, cols, x);
            y[r + i - r0] = (accumulate ? y[r + i - r0] : 0.0f) + v;
        }
    }
    for (; r < r1; ++r) {
        const uint8_t* p = base + uint64_t(r * stride) * es;
        auto a = V::zero();
        for (int64_t c = 0; c < full; c += width) a = V::fma(V::template load<D>(p + uint64_t(c) * es), V::loadx(x + c), a);
        const float v = V::hsum(a) + tail<D>(p, full, cols, x);
        y[r - r0] = (accumulate ? y[r - r0] : 0.0f) + v;
    }
}

// y[c] += sum_j p[j] * W[j, c] for c < cols, j < n_rows (in j order for each c): the transposed
// product, attention's probability-weighted sum of value rows.
template <typename V, DType D>
void weighted_sum(const void* w, int64_t n_rows, int64_t cols, int64_t stride, const float* p, float* y) {
    constexpr size_t es = weight_size<D>();
    constexpr int64_t width = V::width;
    const uint8_t* base = static_cast<const uint8_t*>(w);
    const int64_t full = cols / width * width;
    const bool ahead = cols * int64_t(es) <= k_short_row;  // (rows's prefetch)
    int64_t c = 0;
    // Four vectors of y stay in registers over every row.
    for (; c + 4 * width <= full; c += 4 * width) {
        auto a0 = V::loadx(y + c), a1 = V::loadx(y + c + width);
        auto a2 = V::loadx(y + c + 2 * width), a3 = V::loadx(y + c + 3 * width);
        for (int64_t j = 0; j < n_rows; ++j) {
            const uint8_t* row = base + uint64_t(j * stride + c) * es;
            if (ahead) prefetch_row(row + uint64_t(k_rows_ahead * stride) * es, 4 * width * int64_t(es));
            const auto pj = V::set1(p[j]);
            a0 = V::fma(V::template load<D>(row), pj, a0);
            a1 = V::fma(V::template load<D>(row + width * es), pj, a1);
            a2 = V::fma(V::template load<D>(row + 2 * width * es), pj, a2);
            a3 = V::fma(V::template load<D>(row + 3 * width * es), pj, a3);
        }
        V::store(y + c, a0);
        V::store(y + c + width, a1);
        V::store(y + c + 2 * width, a2);
        V::store(y + c + 3 * width, a3);
    }
    // (The vectors left past the 4-wide passes: head_dim 96 on AVX-512, 16 or 32 in f32.)
    for (; c < full; c += width) {
        auto a = V::loadx(y + c);
        for (int64_t j = 0; j < n_rows; ++j) {
            const uint8_t* row = base + uint64_t(j * stride + c) * es;
            if (ahead) prefetch_row(row + uint64_t(k_rows_ahead * stride) * es, width * int64_t(es));
            a = V::fma(V::template load<D>(row), V::set1(p[j]), a);
        }
        V::store(y + c, a);
    }
    for (; c < cols; ++c) {
        float a = y[c];
        for (int64_t j = 0; j < n_rows; ++j) a += p[j] * element<D>(base + uint64_t(j * stride + c) * es);
        y[c] = a;
    }
}

template <typename V>
void rows_for(const void* w, DType dt, int64_t cols, int64_t stride, const float* x, float* y, int64_t r0, int64_t r1,
              bool accumulate) {
    switch (dt) {
    case DType::f32: rows<V, DType::f32>(w, cols, stride, x, y, r0, r1, accumulate); break;
    case DType::f16: rows<V, DType::f16>(w, cols, stride, x, y, r0, r1, accumulate); break;
    case DType::i8: rows<V, DType::i8>(w, cols, stride, x, y, r0, r1, accumulate); break;
    default: rows<V, DType::bf16>(w, cols, stride, x, y, r0, r1, accumulate); break;
    }
}

// Quantized rows (core/quant.h): q holds rows of cols INT8 values (a scale per row) or INT4 codes
// (two per byte, column 2j in byte j's low nibble; a scale per group of `group` columns). V adds
// load_q8(p) (width INT8 weights widened to f32), q4_cols and load_q4(p, out) (q4_cols INT4
// weights from q4_cols / 2 bytes, q = code - 8, as q4_cols / width vectors: in column order, or
// with q4_split the even columns of the piece, then its odd ones — x is then read in that order,
// from a copy qrows makes) and add. The sums are the CUDA GEMV's: INT8 sum(q x) scaled once per
// row, INT4 each group's sum scaled; the reference's sum((q * scale) x) differs by rounding only.
// R rows of the product (R independent FMA chains; the float kernel's four rows per pass too).
// ahead: the bytes between a row and the one a later pass reads at the same column, which is
// prefetched as this one is read (k_prefetch_passes).
template <typename V, int R>
void qrows_pass(const uint8_t* const (&p)[R], const float* const (&s)[R], bool int4, int64_t group, int64_t cols, const float* x,
                int64_t ahead, float (&out)[R]) {
    constexpr int64_t width = V::width;
    decltype(V::zero()) acc[R];
    for (int i = 0; i < R; ++i) acc[i] = V::zero();
    if (int4) {  // cols % group == 0 and group % q4_cols == 0 (groups of 32, 64 or 128)
        constexpr int per = V::q4_cols / width;
        for (int64_t g = 0; g < cols / group; ++g) {
            decltype(V::zero()) ga[R];
            for (int i = 0; i < R; ++i) ga[i] = V::zero();
            for (int64_t c = g * group; c < (g + 1) * group; c += V::q4_cols) {
                decltype(V::zero()) wq[R][per];
                if ((c & 127) == 0)  // each 64-byte line once
                    for (int i = 0; i < R; ++i) __builtin_prefetch(p[i] + c / 2 + ahead);
                for (int i = 0; i < R; ++i) V::load_q4(p[i] + c / 2, wq[i]);
                for (int k = 0; k < per; ++k) {
                    const auto xv = V::loadx(x + c + k * width);
                    for (int i = 0; i < R; ++i) ga[i] = V::fma(wq[i][k], xv, ga[i]);
                }
            }
            for (int i = 0; i < R; ++i) acc[i] = V::fma(ga[i], V::set1(s[i][g]), acc[i]);
        }
        for (int i = 0; i < R; ++i) out[i] = V::hsum(acc[i]);
        return;
    }
    const int64_t full = cols / width * width;
    for (int64_t c = 0; c < full; c += width) {
        if ((c & 63) == 0)
            for (int i = 0; i < R; ++i) __builtin_prefetch(p[i] + c + ahead);
        const auto xv = V::loadx(x + c);
        for (int i = 0; i < R; ++i) acc[i] = V::fma(V::load_q8(p[i] + c), xv, acc[i]);
    }
    for (int i = 0; i < R; ++i) {
        float t = V::hsum(acc[i]);
        for (int64_t c = full; c < cols; ++c) t += float(int8_t(p[i][c])) * x[c];
        out[i] = t * s[i][0];
    }
}

// The quantized kernels widen each byte into one or two weights before they use it, which takes
// long enough that the CPU's own prefetchers fall behind the four row streams. The rows two passes
// ahead are requested explicitly, one line at a time. On the 2-core AVX-512 CI VM, a 4096 x 4096
// GEMV (bench/host_gemv_bench) took INT4 0.78 -> 0.59 ms (AVX2 kernel 0.99 -> 0.76) and INT8
// 0.70 -> 0.67 ms; one pass ahead measured about the same, two slightly better on 14336 columns.
constexpr int k_prefetch_passes = 2;

// The rows [r0, r1) of a quantized matrix (row_bytes of values and row_scales scales a row), four
// a pass, then one at a time: pass(p, s, ahead, out) is a kernel's R-row pass (R = 4, 1), which
// prefetches `ahead` bytes past each row (passes_ahead passes); y[r - r0] (+)= its sums.
template <typename Pass>
void quant_row_passes(const uint8_t* q, const float* scales, uint64_t row_bytes, int64_t row_scales, int passes_ahead, float* y,
                      int64_t r0, int64_t r1, bool accumulate, Pass&& pass) {
    auto store = [&](int64_t r, float v) { y[r - r0] = (accumulate ? y[r - r0] : 0.0f) + v; };
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) {
        const uint8_t* p[4];
        const float* s[4];
        for (int i = 0; i < 4; ++i) p[i] = q + uint64_t(r + i) * row_bytes, s[i] = scales + (r + i) * row_scales;
        float out[4];
        pass(p, s, passes_ahead * 4 * int64_t(row_bytes), out);
        for (int i = 0; i < 4; ++i) store(r + i, out[i]);
    }
    for (; r < r1; ++r) {
        const uint8_t* p[1] = {q + uint64_t(r) * row_bytes};
        const float* s[1] = {scales + r * row_scales};
        float out[1];
        pass(p, s, passes_ahead * int64_t(row_bytes), out);
        store(r, out[0]);
    }
}

template <typename V>
void qrows(const uint8_t* q, const float* scales, bool int4, int64_t group, int64_t cols, const float* x, float* y, int64_t r0,
           int64_t r1, bool accumulate) {
    const uint64_t row_bytes = int4 ? uint64_t(cols / 2) : uint64_t(cols);
    const int64_t row_scales = int4 ? cols / group : 1;
    if constexpr (V::q4_split) {
        if (int4) {  // x in the kernel's order: each piece of q4_cols columns, its even ones first
            static thread_local std::vector<float> split;
            split.resize(size_t(cols));
            constexpr int64_t half = V::q4_cols / 2;
            for (int64_t c = 0; c < cols; c += V::q4_cols)
                for (int64_t j = 0; j < half; ++j) {
                    split[size_t(c + j)] = x[c + 2 * j];
                    split[size_t(c + half + j)] = x[c + 2 * j + 1];
                }
            x = split.data();
        }
    }
    quant_row_passes(q, scales, row_bytes, row_scales, k_prefetch_passes, y, r0, r1, accumulate,
                     [&]<int R>(const uint8_t* const (&p)[R], const float* const (&s)[R], int64_t ahead, float (&out)[R]) {
                         qrows_pass<V, R>(p, s, int4, group, cols, x, ahead, out);
                     });
}

template <typename V>
void weighted_sum_for(const void* w, DType dt, int64_t n_rows, int64_t cols, int64_t stride, const float* p, float* y) {
    switch (dt) {
    case DType::f32: weighted_sum<V, DType::f32>(w, n_rows, cols, stride, p, y); break;
    case DType::f16: weighted_sum<V, DType::f16>(w, n_rows, cols, stride, p, y); break;
    case DType::i8: weighted_sum<V, DType::i8>(w, n_rows, cols, stride, p, y); break;
    default: weighted_sum<V, DType::bf16>(w, n_rows, cols, stride, p, y); break;
    }
}

}  // namespace
}  // namespace tt::host::detail
