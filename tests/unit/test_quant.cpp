// Quantized weights (core/quant.h, model/weight_quant.h): the exact rounding, quantize/dequantize
// round trips, the CPU reference's quantized GEMV/GEMM against a float64 product, the archive's
// version-2 tensors, and `convert --quant` against load-time quantization of the same archive.
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/ops.h"
#include "convert/convert.h"
#include "convert/quantize_archive.h"
#include "core/error.h"
#include "core/quant.h"
#include "core/thread_pool.h"
#include "format/archive.h"
#include "model/weight_quant.h"
#include "runtime/parity.h"
#include "test_convert_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <tuple>
#include <vector>

using namespace tt;
using tt::test::shared_dir;
using tt::test::TempDir;

namespace {

std::vector<float> random_row(std::mt19937& rng, size_t n, float spread) {
    std::normal_distribution<float> d(0.0f, spread);
    std::vector<float> w(n);
    for (auto& x : w) x = d(rng);
    return w;
}

// A quantized [rows, cols] view over owned storage.
struct QMat {
    QuantizedMatrix m;
    TensorView view;
};
QMat make_qmat(ThreadPool& pool, const std::vector<float>& w, int64_t rows, int64_t cols, QuantScheme s, int g) {
    QMat q;
    q.m = quantize_matrix(pool, w.data(), DType::f32, rows, cols, s, g, "test matrix");
    q.view.name = "test";
    q.view.dtype = s == QuantScheme::int8 ? DType::i8 : DType::u8;
    q.view.shape = {rows, cols};
    q.view.data = q.m.q.data();
    q.view.nbytes = q.m.q.size();
    q.view.quant = s;
    q.view.group_size = s == QuantScheme::int4 ? g : 0;
    q.view.scales = q.m.scales.data();
    return q;
}

}  // namespace

TEST(Quant, Int8RoundsHalfToEvenWithMaxOver127) {
    // max|w| = 127: scale exactly 1, so q is w rounded half to even.
    std::vector<float> w = {127.0f, 2.5f, 3.5f, -2.5f, -0.5f, 0.49f, -127.0f, 1.5f};
    std::vector<uint8_t> q(w.size());
    float scale = 0;
    quantize_row(QuantScheme::int8, 0, w.data(), int64_t(w.size()), q.data(), &scale);
    EXPECT_EQ(scale, 1.0f);
    const int want[] = {127, 2, 4, -2, 0, 0, -127, 2};
    for (size_t i = 0; i < w.size(); ++i) EXPECT_EQ(int(int8_t(q[i])), want[i]) << i;
    // scale = max|w| / 127 in f32 (a division), dequantization q * scale.
    std::vector<float> v = {0.3f, -1.7f, 0.05f};
    quantize_row(QuantScheme::int8, 0, v.data(), 3, q.data(), &scale);
    EXPECT_EQ(scale, 1.7f / 127.0f);
    EXPECT_EQ(int(int8_t(q[0])), int(std::nearbyint(0.3f / scale)));
    std::vector<float> back(3);
    dequantize_row(QuantScheme::int8, 0, q.data(), &scale, 3, back.data());
    EXPECT_EQ(back[1], -127.0f * scale);
    EXPECT_EQ(back[0], float(int8_t(q[0])) * scale);
}

TEST(Quant, Int4PacksOffsetNibblesLowColumnFirst) {
    // One group of 32 whose weight of largest magnitude is -8: scale 1 (= -8 / -8); column 2j in
    // the low nibble of byte j, as q + 8.
    std::vector<float> w(32, 0.0f);
    w[0] = 7.0f;
    w[1] = -8.0f;
    w[2] = 2.5f;   // half to even: 2
    w[3] = -1.5f;  // -2
    w[4] = 0.5f;   // 0
    std::vector<uint8_t> q(16);
    float scale = 0;
    quantize_row(QuantScheme::int4, 32, w.data(), 32, q.data(), &scale);
    EXPECT_EQ(scale, 1.0f);
    EXPECT_EQ(q[0], uint8_t((7 + 8) | (-8 + 8) << 4));
    EXPECT_EQ(q[1], uint8_t((2 + 8) | (-2 + 8) << 4));
    EXPECT_EQ(q[2], uint8_t(8 | 8 << 4));
    std::vector<float> back(32);
    dequantize_row(QuantScheme::int4, 32, q.data(), &scale, 32, back.data());
    EXPECT_EQ(back[0], 7.0f);
    EXPECT_EQ(back[1], -8.0f);
    EXPECT_EQ(back[2], 2.0f);
    EXPECT_EQ(back[3], -2.0f);
    EXPECT_EQ(back[4], 0.0f);
}

// INT4 uses all 16 levels: the weight of largest magnitude m is q = -8 exactly (scale = m / -8, so
// negative when m is positive), the other side reaches q = 7, and a weight beyond 7 steps there
// is clamped. On a tie of magnitudes the first in column order is m.
TEST(Quant, Int4MapsTheLargestMagnitudeToMinusEight) {
    std::vector<float> w(32, 0.0f);
    w[5] = 0.8f;    // m: scale = -0.1
    w[6] = -0.8f;   // same magnitude, later: 0.8 / 0.1 = 8 steps, clamped to 7
    w[7] = -0.35f;  // 3.5 steps: half to even, 4
    w[8] = 0.25f;   // -2.5 steps: -2
    std::vector<uint8_t> q(16);
    float scale = 0;
    quantize_row(QuantScheme::int4, 32, w.data(), 32, q.data(), &scale);
    EXPECT_EQ(scale, 0.8f / -8.0f);
    auto code = [&](int c) { return int(c % 2 ? q[size_t(c / 2)] >> 4 : q[size_t(c / 2)] & 15) - 8; };
    EXPECT_EQ(code(5), -8);
    EXPECT_EQ(code(6), 7);
    EXPECT_EQ(code(7), int(std::nearbyint(-0.35f / scale)));
    EXPECT_EQ(code(8), int(std::nearbyint(0.25f / scale)));
    EXPECT_EQ(code(0), 0);
    std::vector<float> back(32);
    dequantize_row(QuantScheme::int4, 32, q.data(), &scale, 32, back.data());
    EXPECT_EQ(back[5], 0.8f);  // -8 * (0.8 / -8): m comes back exactly
    EXPECT_EQ(back[6], 7.0f * scale);
    // The first of equal magnitudes decides the sign: -0.8 first gives a positive scale.
    std::swap(w[5], w[6]);
    quantize_row(QuantScheme::int4, 32, w.data(), 32, q.data(), &scale);
    EXPECT_EQ(scale, -0.8f / -8.0f);
    EXPECT_EQ(code(5), -8);
    EXPECT_EQ(code(6), 7);
}

TEST(Quant, ZeroRowsAndGroupsHaveScaleZero) {
    std::vector<float> w(64, 0.0f);
    for (int i = 32; i < 64; ++i) w[size_t(i)] = float(i - 40) * 0.01f;
    std::vector<uint8_t> q(32);
    float scales[2];
    quantize_row(QuantScheme::int4, 32, w.data(), 64, q.data(), scales);
    EXPECT_EQ(scales[0], 0.0f);
    EXPECT_NE(scales[1], 0.0f);
    for (int j = 0; j < 16; ++j) EXPECT_EQ(q[size_t(j)], uint8_t(8 | 8 << 4));
    std::vector<uint8_t> q8(64);
    float s8 = -1;
    std::vector<float> zeros(64, 0.0f);
    quantize_row(QuantScheme::int8, 0, zeros.data(), 64, q8.data(), &s8);
    EXPECT_EQ(s8, 0.0f);
    for (auto b : q8) EXPECT_EQ(b, 0);
}

// Dequantized weights are within half a step of the original, and quantizing them again gives the
// same values and scales (the rounding is idempotent).
TEST(Quant, RoundTripWithinHalfAStepAndIdempotent) {
    std::mt19937 rng(7);
    ThreadPool pool(4);
    for (QuantScheme s : {QuantScheme::int8, QuantScheme::int4})
        for (int g : {32, 64, 128}) {
            const int64_t rows = 37, cols = 256;
            std::vector<float> w = random_row(rng, size_t(rows * cols), 0.05f);
            const QuantizedMatrix m = quantize_matrix(pool, w.data(), DType::f32, rows, cols, s, g, "w");
            std::vector<float> back(w.size());
            const int64_t ns = quant_row_scales(s, cols, g);
            const uint64_t rb = quant_row_bytes(s, cols);
            for (int64_t r = 0; r < rows; ++r)
                dequantize_row(s, g, &m.q[size_t(r) * rb], &m.scales[size_t(r * ns)], cols, &back[size_t(r * cols)]);
            const int64_t group = s == QuantScheme::int8 ? cols : g;
            for (int64_t i = 0; i < rows * cols; ++i) {
                const float scale = std::fabs(m.scales[size_t((i / cols) * ns + (i % cols) / group)]);
                // INT4's q = 7 side is clamped: a weight there is within one step of its value.
                const bool clamped = s == QuantScheme::int4 && std::fabs(back[size_t(i)]) == 7.0f * scale;
                ASSERT_LE(std::fabs(w[size_t(i)] - back[size_t(i)]), (clamped ? 1.0f : 0.5f) * scale * (1 + 1e-5f)) << i;
            }
            const QuantizedMatrix again = quantize_matrix(pool, back.data(), DType::f32, rows, cols, s, g, "w");
            EXPECT_EQ(again.q, m.q);
            EXPECT_EQ(again.scales, m.scales);
            if (s == QuantScheme::int8) break;  // the group size does not apply
        }
}

TEST(Quant, QuantizeFromBf16EqualsQuantizeOfWidenedValues) {
    std::mt19937 rng(3);
    ThreadPool pool(2);
    std::vector<float> w = random_row(rng, 8 * 64, 1.0f);
    std::vector<uint16_t> h(w.size());
    convert_floats(w.data(), DType::f32, h.data(), DType::bf16, w.size());
    std::vector<float> wide(w.size());
    to_f32(h.data(), DType::bf16, wide.data(), w.size());
    const QuantizedMatrix a = quantize_matrix(pool, h.data(), DType::bf16, 8, 64, QuantScheme::int4, 32, "w");
    const QuantizedMatrix b = quantize_matrix(pool, wide.data(), DType::f32, 8, 64, QuantScheme::int4, 32, "w");
    EXPECT_EQ(a.q, b.q);
    EXPECT_EQ(a.scales, b.scales);
}

TEST(Quant, BadLayoutsAndValuesAreErrors) {
    ThreadPool pool(1);
    std::vector<float> w(96, 0.1f);
    try {
        (void)quantize_matrix(pool, w.data(), DType::f32, 1, 96, QuantScheme::int4, 64, "blk.0.ffn_down.weight");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("blk.0.ffn_down.weight: cannot be stored as INT4: INT4 group size 64 does not divide the row length 96"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW((void)quantize_matrix(pool, w.data(), DType::f32, 1, 96, QuantScheme::int4, 48, "w"), Error);
    w[5] = NAN;
    try {
        (void)quantize_matrix(pool, w.data(), DType::f32, 1, 96, QuantScheme::int8, 0, "blk.0.attn_q.weight");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("non-finite weight nan at row 0, column 5"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(quant_scheme_from_name("int3"));
}

// The quantized GEMV (1 token) and GEMM (several tokens) of the CPU reference against the product
// computed in float64 from the same integers and scales; and bit for bit the float linear() on
// the dequantized matrix (the dequantization is exact, the accumulation the same f32 loop).
TEST(Quant, CpuLinearMatchesFloat64) {
    std::mt19937 rng(11);
    ThreadPool pool(4);
    const int64_t rows = 192, cols = 512;  // rows * cols * tokens >= 2^18: the pool runs it
    std::vector<float> w = random_row(rng, size_t(rows * cols), 0.02f);
    for (QuantScheme s : {QuantScheme::int8, QuantScheme::int4}) {
        const QMat q = make_qmat(pool, w, rows, cols, s, 32);
        std::vector<float> deq(w.size());
        for (int64_t r = 0; r < rows; ++r) cpu::read_row(q.view, r, &deq[size_t(r * cols)]);
        TensorView fview{"deq", DType::f32, {rows, cols}, reinterpret_cast<const uint8_t*>(deq.data()), deq.size() * 4};
        for (int n : {1, 5}) {
            std::vector<float> x = random_row(rng, size_t(n * cols), 1.0f);
            std::vector<float> y(size_t(n * rows)), yf(size_t(n * rows));
            cpu::linear(pool, x.data(), n, q.view, nullptr, y.data());
            cpu::linear(pool, x.data(), n, fview, nullptr, yf.data());
            EXPECT_EQ(y, yf);
            const int64_t ns = quant_row_scales(s, cols, 32), group = s == QuantScheme::int8 ? cols : 32;
            for (int t = 0; t < n; ++t)
                for (int64_t r = 0; r < rows; ++r) {
                    double acc = 0, mag = 0;
                    for (int64_t c = 0; c < cols; ++c) {
                        const uint8_t* qr = q.m.q.data() + size_t(r) * quant_row_bytes(s, cols);
                        const int qi = s == QuantScheme::int8 ? int(int8_t(qr[c])) : int(c % 2 ? qr[c / 2] >> 4 : qr[c / 2] & 15) - 8;
                        const double wd = double(qi) * double(q.m.scales[size_t(r * ns + c / group)]);
                        acc += double(x[size_t(t * cols + c)]) * wd;
                        mag += std::fabs(double(x[size_t(t * cols + c)]) * wd);
                    }
                    ASSERT_NEAR(double(y[size_t(t * rows + r)]), acc, 1e-5 * mag + 1e-7) << "row " << r << " token " << t;
                }
        }
    }
}

TEST(Quant, ArchiveStoresQuantizedTensorsAsVersion2) {
    TempDir tmp;
    std::mt19937 rng(5);
    ThreadPool pool(1);
    const std::vector<float> w = random_row(rng, 4 * 64, 1.0f);
    const QuantizedMatrix m = quantize_matrix(pool, w.data(), DType::f32, 4, 64, QuantScheme::int4, 32, "w");
    const std::string path = (tmp / "q.thin").string();
    {
        ArchiveWriter wr(path);
        wr.begin_block("layer.0");
        wr.add_quantized("blk.0.attn_q.weight", "blk.0.attn_q.scales", QuantScheme::int4, 32, {4, 64}, m.q.data(), m.scales.data());
        wr.finish({{"spec", nlohmann::json::object()}});
    }
    const Archive a = Archive::open(path);
    EXPECT_EQ(a.header().version, 2u);
    const ArchiveTensor& t = a.tensor("blk.0.attn_q.weight");
    EXPECT_EQ(t.view.quant, QuantScheme::int4);
    EXPECT_EQ(t.view.group_size, 32);
    EXPECT_EQ(t.view.shape, (Shape{4, 64}));
    EXPECT_EQ(t.view.nbytes, 4u * 32u);
    ASSERT_NE(t.view.scales, nullptr);
    EXPECT_EQ(std::vector<float>(t.view.scales, t.view.scales + 8), m.scales);
    EXPECT_EQ(std::vector<uint8_t>(t.view.data, t.view.data + t.view.nbytes), m.q);
    EXPECT_NO_THROW(a.verify());
}

namespace {

std::vector<float> logits_of(const std::string& path, Profile p, const std::vector<int32_t>& ids) {
    const Archive a = Archive::open(path);
    BackendOptions bo;
    bo.profile = p;
    bo.n_threads = 2;
    auto b = make_cpu_backend(a, bo);
    const auto l = b->forward(ids, true);
    return {l.begin(), l.end()};
}

}  // namespace

// `convert --quant` stores what load-time quantization computes from an archive of the same
// --dtype: the logits agree bit for bit (llama: untied head stored INT8; TinyStories: tied, head
// quantized at load from the float embedding in both).
TEST(Quant, ConvertQuantEqualsLoadTimeQuantization) {
    TempDir tmp;
    const std::vector<int32_t> ids = {1, 5, 17, 42, 99, 3, 250, 7};
    struct Case {
        std::string src;
        DType dtype;
        QuantScheme scheme;
        Profile profile;
    };
    for (const Case& c : {Case{"fixtures/hf-tiny/llama", DType::bf16, QuantScheme::int8, Profile::max_performance},
                          Case{"fixtures/hf-tiny/llama", DType::f32, QuantScheme::int4, Profile::max_max_perf},
                          Case{"models/tinystories-656k", DType::f32, QuantScheme::int4, Profile::max_max_perf}}) {
        ConvertOptions fo;
        fo.dtype = c.dtype;
        const std::string fpath = (tmp / "float.thin").string(), qpath = (tmp / "quant.thin").string();
        convert_hf((shared_dir() / c.src).string(), fpath, fo);
        ConvertOptions qo = fo;
        qo.quant = c.scheme;
        convert_hf((shared_dir() / c.src).string(), qpath, qo);
        EXPECT_LT(std::filesystem::file_size(qpath), std::filesystem::file_size(fpath)) << c.src;
        const auto lf = logits_of(fpath, c.profile, ids), lq = logits_of(qpath, c.profile, ids);
        EXPECT_EQ(lf, lq) << c.src << " " << quant_scheme_name(c.scheme);
        // The float archive under the float profile differs: the quantization is applied.
        EXPECT_NE(logits_of(fpath, Profile::balanced, ids), lq);
    }
}

// quantize_archive (the CUDA backend's load-time quantization) writes the tensors `convert --quant`
// writes: the same names, blocks, bytes and scales, and the same logits on the CPU reference.
TEST(Quant, QuantizeArchiveEqualsConvertQuant) {
    TempDir tmp;
    const std::vector<int32_t> ids = {1, 5, 17, 42, 99, 3, 250, 7};
    for (const auto& [src, scheme, profile] :
         {std::tuple{"fixtures/hf-tiny/llama", QuantScheme::int8, Profile::max_performance},
          std::tuple{"models/tinystories-656k", QuantScheme::int4, Profile::max_max_perf}}) {
        ConvertOptions fo;
        fo.dtype = DType::bf16;
        const std::string fpath = (tmp / "float.thin").string(), cpath = (tmp / "conv.thin").string();
        const std::string rpath = (tmp / "requant.thin").string();
        convert_hf((shared_dir() / src).string(), fpath, fo);
        ConvertOptions qo = fo;
        qo.quant = scheme;
        convert_hf((shared_dir() / src).string(), cpath, qo);
        ThreadPool pool(2);
        quantize_archive(Archive::open(fpath), scheme, k_int4_default_group, rpath, pool);
        const Archive c = Archive::open(cpath), r = Archive::open(rpath);
        ASSERT_EQ(c.tensors().size(), r.tensors().size()) << src;
        EXPECT_EQ(r.header().version, k_thin_version);
        for (const ArchiveTensor& t : c.tensors()) {
            const ArchiveTensor* u = r.find(t.view.name);
            ASSERT_NE(u, nullptr) << t.view.name;
            EXPECT_EQ(u->block, t.block) << t.view.name;
            EXPECT_EQ(u->view.quant, t.view.quant) << t.view.name;
            EXPECT_EQ(u->view.shape, t.view.shape) << t.view.name;
            ASSERT_EQ(u->view.nbytes, t.view.nbytes) << t.view.name;
            EXPECT_EQ(std::memcmp(u->view.data, t.view.data, t.view.nbytes), 0) << t.view.name;
        }
        EXPECT_EQ(r.metadata()["quant"], c.metadata()["quant"]);
        EXPECT_EQ(logits_of(rpath, profile, ids), logits_of(cpath, profile, ids)) << src;
        // A quantized archive is not quantized again.
        EXPECT_THROW(quantize_archive(r, scheme, k_int4_default_group, (tmp / "again.thin").string(), pool), Error);
        EXPECT_FALSE(std::filesystem::exists(tmp / "again.thin"));
    }
}

TEST(Quant, ProfileTheArchiveCannotProvideIsAnError) {
    TempDir tmp;
    ConvertOptions o;
    o.quant = QuantScheme::int8;
    const std::string path = (tmp / "q8.thin").string();
    convert_hf((shared_dir() / "fixtures/hf-tiny/llama").string(), path, o);
    const Archive a = Archive::open(path);
    BackendOptions bo;
    bo.profile = Profile::max_max_perf;
    try {
        (void)make_cpu_backend(a, bo);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--profile max-max-perf needs INT4 weights, but tensor 'blk.0.attn_q.weight' is stored as INT8"),
                  std::string::npos)
            << e.what();
    }
}

TEST(Quant, ProfilesAndTheirBounds) {
    EXPECT_EQ(parse_profile("max-performance"), Profile::max_performance);
    EXPECT_EQ(parse_profile("max-max-perf"), Profile::max_max_perf);
    EXPECT_THROW(parse_profile("max-speed"), Error);
    EXPECT_EQ(profile_weight_scheme(Profile::balanced), QuantScheme::none);
    EXPECT_EQ(profile_weight_scheme(Profile::max_performance), QuantScheme::int8);
    EXPECT_EQ(profile_weight_scheme(Profile::max_max_perf), QuantScheme::int4);
    // The bounds docs/QUANTIZATION.md derives from the measurements, whatever the archive's dtype.
    for (bool strict : {false, true}) {
        const ParityThresholds q8 = reference_file_thresholds(Profile::max_performance, strict);
        EXPECT_EQ(q8.min_cosine, 0.999);
        EXPECT_EQ(q8.max_mean_kl, 1e-3);
        const ParityThresholds q4 = reference_file_thresholds(Profile::max_max_perf, strict);
        EXPECT_EQ(q4.min_cosine, 0.97);
        EXPECT_EQ(q4.max_mean_kl, 0.05);
        EXPECT_TRUE(std::isinf(q4.max_abs_diff));
    }
    EXPECT_EQ(reference_file_thresholds(Profile::balanced, true).min_cosine, 0.99999);
    EXPECT_EQ(reference_file_thresholds(Profile::balanced, true).max_abs_diff, 1e-3);
    EXPECT_TRUE(std::isinf(reference_file_thresholds(Profile::balanced, false).max_mean_kl));
    EXPECT_EQ(default_parity_thresholds(Profile::max_max_perf, true, true).max_mean_kl, 0.05);
    // The policy: body projections take the profile's scheme, the head INT8, the rest stay float.
    EXPECT_EQ(role_quant_scheme(Role::attn_q, QuantScheme::int4), QuantScheme::int4);
    EXPECT_EQ(role_quant_scheme(Role::output, QuantScheme::int4), QuantScheme::int8);
    EXPECT_EQ(role_quant_scheme(Role::token_embd, QuantScheme::int8), QuantScheme::none);
    EXPECT_EQ(role_quant_scheme(Role::moe_router, QuantScheme::int8), QuantScheme::none);
    EXPECT_EQ(role_quant_scheme(Role::attn_norm, QuantScheme::int8), QuantScheme::none);
    EXPECT_EQ(role_quant_scheme(Role::ffn_down, QuantScheme::none), QuantScheme::none);
}
