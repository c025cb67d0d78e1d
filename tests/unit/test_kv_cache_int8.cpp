// The 8-bit KV cache (runtime/kv_cache_type.h): a row rounded through INT8 against a float64
// rounding of the same rule, heads scaled apart; and its measured effect on a real trained model,
// TinyStories-656K on the CPU reference: a 480-token story (the f32 cache's own greedy text)
// teacher-forced through both caches, every position's logits compared (the quality figures of
// docs/QUANTIZATION.md), under max-max-perf's default as when asked. --kv-cache's values and
// their refusal; the choice between caches per profile and device is test_kv_cache_choice.cpp's.
#include "backends/cpu/cpu_backend.h"
#include "convert/convert.h"
#include "core/error.h"
#include "format/archive.h"
#include "model/archive_spec.h"
#include "runtime/backend.h"
#include "runtime/compare.h"
#include "runtime/kv_cache_type.h"
#include "runtime/parity.h"
#include "runtime/plan.h"
#include "runtime/reference.h"
#include "test_convert_util.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace tt;

TEST(KvCacheInt8, RowRoundsLikeAFloat64Rounding) {
    std::mt19937 rng(3);
    std::normal_distribution<float> d(0.0f, 2.0f);
    const int heads = 4, hd = 64;
    std::vector<float> row(size_t(heads * hd));
    for (auto& v : row) v = d(rng);
    row[5] = 300.0f;                    // an outlier in head 0 coarsens head 0 only
    std::fill_n(row.begin() + 2 * hd, hd, 0.0f);  // head 2 all zero: stays zero
    std::vector<float> got = row;
    round_kv_row_int8(got.data(), heads, hd);
    for (int h = 0; h < heads; ++h) {
        double amax = 0;
        for (int c = 0; c < hd; ++c) amax = std::max(amax, std::fabs(double(row[size_t(h * hd + c)])));
        const double scale = amax / 127.0;
        for (int c = 0; c < hd; ++c) {
            const size_t i = size_t(h * hd + c);
            if (amax == 0) {
                EXPECT_EQ(got[i], 0.0f);
                continue;
            }
            const double q = std::nearbyint(double(row[i]) / scale);
            EXPECT_LE(std::fabs(q), 127.0);
            // The f32 scale and product differ from float64's by rounding only.
            EXPECT_NEAR(double(got[i]), q * scale, 1e-6 * amax) << "head " << h << " col " << c;
            EXPECT_LE(std::fabs(double(got[i]) - double(row[i])), 0.5 * scale * (1 + 1e-6)) << "head " << h << " col " << c;
        }
    }
    EXPECT_EQ(got[5], 300.0f);                           // the largest value is kept exactly (q = 127)
    EXPECT_NEAR(got[hd + 1], row[hd + 1], 0.5 * 8.0 / 127);  // head 1 keeps its own fine scale
    std::vector<float> again = got;
    round_kv_row_int8(again.data(), heads, hd);
    EXPECT_EQ(again, got);                               // rounding a rounded row changes nothing
}

TEST(KvCacheInt8, NamesAndRefusals) {
    EXPECT_EQ(parse_kv_cache_request("auto"), KvCacheRequest::automatic);
    EXPECT_EQ(parse_kv_cache_request("float"), KvCacheRequest::floating);
    EXPECT_EQ(parse_kv_cache_request("int8"), KvCacheRequest::int8);
    for (KvCacheRequest r : {KvCacheRequest::automatic, KvCacheRequest::floating, KvCacheRequest::int8})
        EXPECT_EQ(parse_kv_cache_request(kv_cache_request_name(r)), r);
    EXPECT_STREQ(kv_cache_type_name(KvCacheType::int8), "int8");
    EXPECT_STREQ(kv_cache_type_name(KvCacheType::floating), "float");
    // The old spelling of the float cache's enum value is not a flag value; neither is a case change.
    for (const char* bad : {"q4", "automatic", "floating", "INT8", ""}) {
        try {
            parse_kv_cache_request(bad);
            FAIL() << "expected an error for '" << bad << "'";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(fmt::format("--kv-cache '{}': unknown KV cache type (choose auto, float or int8)", bad)),
                      std::string::npos)
                << e.what();
        }
    }
}

TEST(KvCacheInt8, ValidateBounds) {
    // Strict f32 bounds loosen to the cache's; the quantized profiles' (looser) stay.
    const ParityThresholds strict = with_kv_cache(reference_file_thresholds(Profile::balanced, true), KvCacheType::int8);
    EXPECT_EQ(strict.min_cosine, 0.9995);
    EXPECT_EQ(strict.max_mean_kl, 1e-3);
    EXPECT_TRUE(std::isinf(strict.max_abs_diff));
    const ParityThresholds q4 = with_kv_cache(reference_file_thresholds(Profile::max_max_perf, true), KvCacheType::int8);
    EXPECT_EQ(q4.min_cosine, 0.97);
    EXPECT_EQ(q4.max_mean_kl, 0.05);
    const ParityThresholds safe = default_parity_thresholds(Profile::safe, true, true);
    const ParityThresholds same = with_kv_cache(safe, KvCacheType::floating);
    EXPECT_EQ(same.min_cosine, safe.min_cosine);
    EXPECT_EQ(same.max_mean_kl, safe.max_mean_kl);
    const ParityThresholds safe8 = with_kv_cache(safe, KvCacheType::int8);  // 0.99999 / 1e-4
    EXPECT_EQ(safe8.min_cosine, 0.9995);
    EXPECT_EQ(safe8.max_mean_kl, 1e-3);
    const ParityThresholds loose = with_kv_cache(reference_file_thresholds(Profile::balanced, false), KvCacheType::int8);
    EXPECT_EQ(loose.min_cosine, 0.999);  // a bf16 check's bounds are looser already
    EXPECT_TRUE(std::isinf(loose.max_mean_kl));
}

// The GPU planner's bytes for the 8-bit cache (the CUDA backend allocates from the same
// arithmetic): a byte a value and an f32 scale a (position, KV head) row, K and V; the prefill's
// dequantized rows in the weights' dtype. (Layers on the CPU beside it: test_plan.cpp.)
TEST(KvCacheInt8, PlannerCountsItsBytes) {
    const ModelSpec s = spec_from_archive(test::tinystories_f32_archive());
    constexpr int ctx = 256;
    uint64_t want = 0, f32 = 0;
    for (int il = 0; il < s.n_layers; ++il)
        if (s.has_kv(il)) {
            want += 2 * uint64_t(ctx) * uint64_t(s.layer_kv_dim(il) + 4 * s.layer_n_kv_heads(il));
            f32 += 2 * uint64_t(ctx) * uint64_t(s.layer_kv_dim(il)) * 4;
        }
    EXPECT_EQ(kv_cache_bytes(s, ctx, DType::f32, KvCacheType::int8), want);
    EXPECT_EQ(kv_cache_bytes(s, ctx, DType::f32), f32);
    EXPECT_LT(kv_cache_bytes(s, ctx, DType::bf16, KvCacheType::int8), kv_cache_bytes(s, ctx, DType::bf16));
    // The parts the CUDA backend allocates: values and scales, their sum the layer's bytes.
    const KvCacheParts p8 = kv_cache_layer_parts(s, 0, ctx, DType::bf16, KvCacheType::int8);
    EXPECT_EQ(p8.values, uint64_t(ctx) * uint64_t(s.layer_kv_dim(0)));
    EXPECT_EQ(p8.scales, uint64_t(ctx) * uint64_t(s.layer_n_kv_heads(0)) * 4);
    EXPECT_EQ(p8.values + p8.scales, kv_cache_layer_bytes(s, 0, ctx, DType::bf16, KvCacheType::int8));
    EXPECT_EQ(kv_cache_layer_parts(s, 0, ctx, DType::bf16, KvCacheType::floating).scales, 0u);
    const auto lines = fixed_vram_lines(s, DType::bf16, ctx, 1, KvCacheType::int8);
    EXPECT_NE(lines[0].what.find("8-bit"), std::string::npos) << lines[0].what;
    EXPECT_EQ(lines[0].bytes, kv_cache_bytes(s, ctx, DType::bf16, KvCacheType::int8));
    const auto pre = prefill_buffers(s, 64, ctx, DType::bf16, 1, KvCacheType::int8);
    EXPECT_EQ(pre[size_t(PrefillBuf::kv_rows)].bytes, 2 * uint64_t(ctx) * uint64_t(s.kv_dim()) * 2);
    EXPECT_EQ(prefill_buffers(s, 64, ctx, DType::bf16, 1)[size_t(PrefillBuf::kv_rows)].bytes, 0u);
}

TEST(KvCacheInt8, TinyStoriesOverALongStory) {
    const Archive& a = test::tinystories_f32_archive();
    const ReferenceCase ref =
        load_reference(std::string(TT_SHARED_DIR) + "/models/tinystories-656k/reference.safetensors", "logits_f32");
    constexpr int n = 480;  // of the model's 512 positions
    BackendOptions opt;
    opt.context = n;
    opt.n_threads = 2;
    auto f32 = make_cpu_backend(a, opt);
    EXPECT_EQ(f32->kv_cache(), KvCacheType::floating);  // auto under balanced
    opt.kv_cache = KvCacheRequest::int8;
    auto int8 = make_cpu_backend(a, opt);
    EXPECT_EQ(int8->kv_cache(), KvCacheType::int8);
    EXPECT_NE(int8->describe().find("8-bit KV cache"), std::string::npos) << int8->describe();
    // The story: the reference prompt, then the f32 cache's greedy continuation.
    std::vector<int32_t> ids = ref.input_ids;
    std::span<const float> last = f32->forward(ids, false);
    while (int(ids.size()) < n) {
        ids.push_back(int32_t(std::max_element(last.begin(), last.end()) - last.begin()));
        last = f32->forward(std::span<const int32_t>(&ids.back(), 1), false);
    }
    // Both caches from empty over the whole story, every position's logits.
    f32->rewind(0);
    const std::vector<float> want = [&] { auto s = f32->forward(ids, true); return std::vector<float>(s.begin(), s.end()); }();
    const std::span<const float> got = int8->forward(ids, true);
    const int vocab = int(want.size() / ids.size());
    const LogitComparison c = compare_logits(want.data(), got.data(), n, vocab);
    // Each half on its own: the second half attends over the longer cache.
    const LogitComparison late = compare_logits(want.data() + size_t(n / 2) * size_t(vocab), got.data() + size_t(n / 2) * size_t(vocab),
                                                n / 2, vocab);
    std::printf("8-bit KV cache vs f32, TinyStories-656K, %d positions: min cosine %.6f, mean KL %.3e, max KL %.3e, top-1 %.2f%%, "
                "max |dlogit| %.3f; positions %d..%d: mean KL %.3e, top-1 %.2f%%\n",
                n, c.min_cosine, c.mean_kl, c.max_kl, 100 * c.top1_agreement, c.max_abs_diff, n / 2, n - 1, late.mean_kl,
                100 * late.top1_agreement);
    ASSERT_TRUE(c.finite());
    EXPECT_GT(c.max_abs_diff, 0.0);  // the flag takes effect
    EXPECT_GT(c.min_cosine, 0.9995);
    EXPECT_LT(c.mean_kl, 2e-4);
    EXPECT_GT(c.top1_agreement, 0.97);
    EXPECT_LT(late.mean_kl, 2e-4);

    // Beside INT4 weights (max-max-perf, the profile it is meant for): the same story through
    // INT4 weights with the f32 cache and with the 8-bit one, both against the f32 run.
    opt.profile = Profile::max_max_perf;
    // Every position's logits of a fresh backend (kept alive while they are copied: forward's span
    // points into the backend).
    const auto logits_of = [&] {
        const auto b = make_cpu_backend(a, opt);
        const std::span<const float> l = b->forward(ids, true);
        return std::vector<float>(l.begin(), l.end());
    };
    opt.kv_cache = KvCacheRequest::floating;
    const std::vector<float> q4 = logits_of();
    opt.kv_cache = KvCacheRequest::int8;
    const std::vector<float> q4kv = logits_of();
    // The profile's default (--kv-cache auto) is the 8-bit cache: the same logits bit for bit.
    opt.kv_cache = KvCacheRequest::automatic;
    auto q4auto = make_cpu_backend(a, opt);
    EXPECT_EQ(q4auto->kv_cache(), KvCacheType::int8);
    EXPECT_NE(q4auto->describe().find("8-bit KV cache"), std::string::npos) << q4auto->describe();
    const std::span<const float> q4a = q4auto->forward(ids, true);
    EXPECT_TRUE(std::equal(q4a.begin(), q4a.end(), q4kv.begin(), q4kv.end()));
    const LogitComparison w4 = compare_logits(want.data(), q4.data(), n, vocab), w4kv = compare_logits(want.data(), q4kv.data(), n, vocab);
    std::printf("INT4 weights vs f32: mean KL %.3e, top-1 %.2f%%, min cosine %.6f; with the 8-bit KV cache: mean KL %.3e, top-1 "
                "%.2f%%, min cosine %.6f\n",
                w4.mean_kl, 100 * w4.top1_agreement, w4.min_cosine, w4kv.mean_kl, 100 * w4kv.top1_agreement, w4kv.min_cosine);
    // The cache adds a small fraction of what the weights cost.
    EXPECT_LT(w4kv.mean_kl, 1.1 * w4.mean_kl);
    EXPECT_GT(w4kv.top1_agreement, w4.top1_agreement - 0.02);
}
