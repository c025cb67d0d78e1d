// The host decode path's GEMV (src/backends/host/gemv.h) against the readable reference
// (cpu::linear): every instruction set this CPU runs, every weight dtype, odd sizes that leave
// vector tails and row remainders, with and without the residual add.
#include "backends/cpu/ops.h"
#include "backends/host/gemv.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/thread_pool.h"
#include "model/weight_quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

using namespace tt;

namespace {

struct Matrix {
    std::vector<uint8_t> bytes;
    TensorView view;
};

Matrix random_matrix(std::mt19937& rng, DType dt, int64_t rows, int64_t cols) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> f(static_cast<size_t>(rows * cols));
    for (auto& v : f) v = d(rng);
    Matrix m;
    m.bytes.resize(f.size() * dtype_size(dt));
    for (size_t i = 0; i < f.size(); ++i) {
        uint8_t* p = m.bytes.data() + i * dtype_size(dt);
        if (dt == DType::f32) std::memcpy(p, &f[i], 4);
        else if (dt == DType::i8) *p = uint8_t(int8_t(std::clamp(std::nearbyint(f[i] * 40.0f), -127.0f, 127.0f)));  // 8-bit KV rows
        else if (dt == DType::f16) { const uint16_t h = f32_to_f16(f[i]); std::memcpy(p, &h, 2); }
        else { const uint16_t b = f32_to_bf16(f[i]); std::memcpy(p, &b, 2); }
    }
    m.view.dtype = dt;
    m.view.shape = {rows, cols};
    m.view.data = m.bytes.data();
    m.view.nbytes = m.bytes.size();
    return m;
}

// Row j of m as floats (an i8 matrix's values as they are: the 8-bit KV cache's caller scales).
std::vector<float> row_of(const Matrix& m, int64_t j) {
    std::vector<float> row(static_cast<size_t>(m.view.shape[1]));
    if (m.view.dtype != DType::i8) {
        cpu::read_row(m.view, j, row.data());
        return row;
    }
    for (size_t c = 0; c < row.size(); ++c) row[c] = float(int8_t(m.bytes[size_t(j) * row.size() + c]));
    return row;
}

}  // namespace

TEST(HostGemv, MatchesTheReferenceOnEveryIsaAndDtype) {
    ThreadPool pool(2);
    std::mt19937 rng(11);
    std::normal_distribution<float> d(0.0f, 1.0f);
    int checked = 0;
    for (host::Isa isa : {host::Isa::scalar, host::Isa::avx2, host::Isa::avx512, host::Isa::avx512vnni}) {
        if (!host::isa_supported(isa)) {
            std::printf("note: this CPU has no %s kernels; not checked here\n", host::isa_name(isa));
            continue;
        }
        for (DType dt : {DType::f32, DType::f16, DType::bf16})
            for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {4, 16}, {7, 33}, {33, 64}, {257, 100},
                                      {64, 1000}, {130, 2048}, {1031, 513}})
                for (bool accumulate : {false, true}) {
                    SCOPED_TRACE(::testing::Message() << host::isa_name(isa) << " " << dtype_name(dt) << " " << rows << "x"
                                                      << cols << (accumulate ? " +=" : ""));
                    const Matrix w = random_matrix(rng, dt, rows, cols);
                    std::vector<float> x(static_cast<size_t>(cols)), y0(static_cast<size_t>(rows)), want(static_cast<size_t>(rows)), got;
                    for (auto& v : x) v = d(rng);
                    for (auto& v : y0) v = d(rng);
                    cpu::linear(pool, x.data(), 1, w.view, nullptr, want.data());
                    if (accumulate)
                        for (size_t r = 0; r < want.size(); ++r) want[r] += y0[r];
                    got = y0;
                    host::gemv(pool, w.view, x.data(), got.data(), accumulate, isa);
                    // f32 sums in another order: within a few ulps of the sum of |terms|.
                    for (int64_t r = 0; r < rows; ++r) {
                        std::vector<float> row(static_cast<size_t>(cols));
                        cpu::read_row(w.view, r, row.data());
                        double mag = accumulate ? std::fabs(y0[size_t(r)]) : 0.0;
                        for (int64_t c = 0; c < cols; ++c) mag += std::fabs(double(row[size_t(c)]) * x[size_t(c)]);
                        ASSERT_NEAR(got[size_t(r)], want[size_t(r)], 4e-6 * mag + 1e-30) << "row " << r;
                    }
                    ++checked;
                }
    }
    EXPECT_GE(checked, 54);  // at least the scalar kernels, every case
}

TEST(HostGemv, QuantizedRowsMatchTheReference) {
    // INT8 rows (lengths that leave vector tails) and INT4 in groups of 32/64/128, against
    // cpu::linear on the same quantized view (read_row dequantizes: (q * scale) x summed, where the
    // host sums q x and scales per row or group) and against a float64 sum of q * scale * x.
    ThreadPool pool(2);
    std::mt19937 rng(13);
    std::normal_distribution<float> d(0.0f, 1.0f);
    int checked = 0;
    for (host::Isa isa : {host::Isa::scalar, host::Isa::avx2, host::Isa::avx512, host::Isa::avx512vnni}) {
        if (!host::isa_supported(isa)) continue;
        for (auto [scheme, group, rows, cols] :
             {std::tuple<QuantScheme, int, int64_t, int64_t>{QuantScheme::int8, 0, 1, 1}, {QuantScheme::int8, 0, 7, 33},
              {QuantScheme::int8, 0, 130, 2048}, {QuantScheme::int8, 0, 1031, 513}, {QuantScheme::int4, 32, 3, 32},
              {QuantScheme::int4, 32, 257, 96}, {QuantScheme::int4, 64, 65, 1024}, {QuantScheme::int4, 128, 130, 2048},
              {QuantScheme::int4, 64, 9, 192}, {QuantScheme::int4, 32, 6, 4160}})
            for (bool accumulate : {false, true}) {
                SCOPED_TRACE(::testing::Message() << host::isa_name(isa) << " " << quant_scheme_name(scheme) << " g" << group << " "
                                                  << rows << "x" << cols << (accumulate ? " +=" : ""));
                std::vector<float> wf(static_cast<size_t>(rows * cols)), x(static_cast<size_t>(cols)), y0(static_cast<size_t>(rows));
                for (auto& v : wf) v = d(rng);
                for (auto& v : x) v = d(rng);
                for (auto& v : y0) v = d(rng);
                QuantizedWeights owned;
                const TensorView& w = *owned.add("test", Shape{rows, cols}, scheme, group,
                                                 quantize_matrix(pool, wf.data(), DType::f32, rows, cols, scheme, group, "test"));
                std::vector<float> want(static_cast<size_t>(rows)), got = y0;
                cpu::linear(pool, x.data(), 1, w, nullptr, want.data());
                host::gemv(pool, w, x.data(), got.data(), accumulate, isa);
                for (int64_t r = 0; r < rows; ++r) {
                    std::vector<float> row(static_cast<size_t>(cols));
                    cpu::read_row(w, r, row.data());
                    double exact = accumulate ? double(y0[size_t(r)]) : 0.0, mag = std::fabs(exact);
                    for (int64_t c = 0; c < cols; ++c) {
                        exact += double(row[size_t(c)]) * x[size_t(c)];
                        mag += std::fabs(double(row[size_t(c)]) * x[size_t(c)]);
                    }
                    const double ref = want[size_t(r)] + (accumulate ? y0[size_t(r)] : 0.0f);
                    ASSERT_NEAR(got[size_t(r)], exact, 4e-6 * mag + 1e-30) << "row " << r << " (float64)";
                    ASSERT_NEAR(got[size_t(r)], ref, 8e-6 * mag + 1e-30) << "row " << r << " (cpu::linear)";
                }
                ++checked;
            }
    }
    EXPECT_GE(checked, 20);  // at least the scalar kernels, every case
}

TEST(HostGemv, Int4OnVnniHoldsXOfEveryScale) {
    // The VNNI kernel rounds x to 2^-21 of its largest |x| in each block of 128 columns: blocks whose
    // scales differ by 2^60, an all-zero block, and tiny values next to large ones stay within the
    // f32 kernels' bound of the float64 sum. Infinities and NaN, which no integer digit carries,
    // come out as the f32 AVX-512 kernel's.
    if (!host::isa_supported(host::Isa::avx512vnni)) GTEST_SKIP() << "this CPU has no AVX-512 VNNI";
    ThreadPool pool(2);
    std::mt19937 rng(14);
    std::normal_distribution<float> d(0.0f, 1.0f);
    const int64_t rows = 37, cols = 896;
    std::vector<float> wf(static_cast<size_t>(rows * cols));
    for (auto& v : wf) v = d(rng);
    for (int group : {32, 64, 128}) {
        SCOPED_TRACE(::testing::Message() << "g" << group);
        QuantizedWeights owned;
        const TensorView& w = *owned.add("test", Shape{rows, cols}, QuantScheme::int4, group,
                                         quantize_matrix(pool, wf.data(), DType::f32, rows, cols, QuantScheme::int4, group, "test"));
        std::vector<float> x(static_cast<size_t>(cols));
        for (int64_t c = 0; c < cols; ++c) {
            const int64_t block = c / 128;
            const float scale = block == 0 ? 1.0f : block == 1 ? 0.0f : block == 2 ? 1e-18f : block == 3 ? 1e18f : 1.0f;
            x[size_t(c)] = d(rng) * scale;
            if (block == 4 && c % 7 == 0) x[size_t(c)] *= 1e-6f;  // tiny values beside large ones
        }
        std::vector<float> got(static_cast<size_t>(rows));
        // got = W xv on the VNNI kernel, within the f32 kernels' bound of the float64 sum.
        auto check = [&](const std::vector<float>& xv, const char* what) {
            host::gemv(pool, w, xv.data(), got.data(), false, host::Isa::avx512vnni);
            for (int64_t r = 0; r < rows; ++r) {
                std::vector<float> row(static_cast<size_t>(cols));
                cpu::read_row(w, r, row.data());
                double exact = 0, mag = 0;
                for (int64_t c = 0; c < cols; ++c) {
                    exact += double(row[size_t(c)]) * xv[size_t(c)];
                    mag += std::fabs(double(row[size_t(c)]) * xv[size_t(c)]);
                }
                ASSERT_NEAR(got[size_t(r)], exact, 4e-6 * mag) << "row " << r << " (" << what << ")";
            }
        };
        check(x, "x");
        // (Block 2's products, ~1e-18, are below that bound's resolution beside the others: apart.)
        std::vector<float> small(x.size(), 0.0f);
        for (int64_t c = 256; c < 384; ++c) small[size_t(c)] = x[size_t(c)];  // block 2 alone
        check(small, "block 2 alone");
        // A new x in the same buffer (as a layer's scratch holds each token's) is prepared anew, and
        // the same x again reuses what was prepared: the result is the float64 sum's either way.
        for (int64_t c = 0; c < cols; c += 3) small[size_t(c)] = -0.5f * x[size_t(c)] + 1.0f;
        check(small, "small, changed in place");
        check(small, "the same x again");
        for (float bad : {INFINITY, -INFINITY, NAN}) {
            std::vector<float> xb = x, want(static_cast<size_t>(rows));
            xb[500] = bad;
            host::gemv(pool, w, xb.data(), got.data(), false, host::Isa::avx512vnni);
            host::gemv(pool, w, xb.data(), want.data(), false, host::Isa::avx512);
            for (int64_t r = 0; r < rows; ++r) {
                ASSERT_EQ(std::isnan(got[size_t(r)]), std::isnan(want[size_t(r)])) << "row " << r << " x has " << bad;
                if (!std::isnan(want[size_t(r)])) {
                    ASSERT_EQ(got[size_t(r)], want[size_t(r)]) << "row " << r << " x has " << bad;
                }
                ASSERT_FALSE(std::isfinite(got[size_t(r)])) << "row " << r << " x has " << bad;
            }
        }
    }
}

TEST(HostGemv, BestIsaIsSupported) {
    EXPECT_TRUE(host::isa_supported(host::best_isa()));
    EXPECT_TRUE(host::isa_supported(host::Isa::scalar));
}

TEST(HostGemv, StridedRowsMatchTheScalarSums) {
    // Attention over one head's slice of a KV cache: rows kv_dim apart, head_dim wide, from an
    // offset; dot_rows gives the scores, weighted_row_sum the values' weighted sum (added to y).
    // Float rows and the 8-bit KV cache's INT8 rows (unscaled).
    std::mt19937 rng(12);
    std::normal_distribution<float> d(0.0f, 1.0f);
    int checked = 0;
    for (host::Isa isa : {host::Isa::scalar, host::Isa::avx2, host::Isa::avx512, host::Isa::avx512vnni}) {
        if (!host::isa_supported(isa)) continue;
        for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::i8})
            for (auto [n_rows, cols, stride, offset] :
                 {std::tuple<int64_t, int64_t, int64_t, int64_t>{0, 16, 32, 0}, {1, 16, 16, 0}, {5, 16, 64, 16}, {9, 32, 64, 32},
                  {37, 64, 256, 128}, {3, 7, 21, 7}, {17, 100, 300, 200}, {130, 128, 1024, 896}, {6, 256, 512, 256}}) {
                SCOPED_TRACE(::testing::Message() << host::isa_name(isa) << " " << dtype_name(dt) << " " << n_rows << "x" << cols
                                                  << " stride " << stride << " +" << offset);
                const Matrix m = random_matrix(rng, dt, std::max<int64_t>(n_rows, 1), stride);
                const uint8_t* base = m.bytes.data() + size_t(offset) * dtype_size(dt);
                std::vector<float> x(static_cast<size_t>(cols)), p(static_cast<size_t>(n_rows)), y0(static_cast<size_t>(cols));
                for (auto& v : x) v = d(rng);
                for (auto& v : p) v = std::fabs(d(rng));
                for (auto& v : y0) v = d(rng);
                std::vector<float> scores(static_cast<size_t>(n_rows) + 1, -7.0f), y = y0;
                host::dot_rows(base, dt, n_rows, cols, stride, x.data(), scores.data(), isa);
                host::weighted_row_sum(base, dt, n_rows, cols, stride, p.data(), y.data(), isa);
                EXPECT_EQ(scores[size_t(n_rows)], -7.0f);  // nothing written past n_rows
                std::vector<double> want_y(y0.begin(), y0.end()), mag_y(static_cast<size_t>(cols));
                for (int64_t j = 0; j < n_rows; ++j) {
                    const std::vector<float> row = row_of(m, j);
                    double want = 0, mag = 0;
                    for (int64_t c = 0; c < cols; ++c) {
                        const double w = row[size_t(offset + c)];
                        want += w * x[size_t(c)];
                        mag += std::fabs(w * x[size_t(c)]);
                        want_y[size_t(c)] += p[size_t(j)] * w;
                        mag_y[size_t(c)] += std::fabs(p[size_t(j)] * w);
                    }
                    ASSERT_NEAR(scores[size_t(j)], want, 4e-6 * mag + 1e-30) << "row " << j;
                }
                for (int64_t c = 0; c < cols; ++c)
                    ASSERT_NEAR(y[size_t(c)], want_y[size_t(c)], 4e-6 * (mag_y[size_t(c)] + std::fabs(y0[size_t(c)])) + 1e-30)
                        << "col " << c;
                ++checked;
            }
    }
    EXPECT_GE(checked, 36);
}
