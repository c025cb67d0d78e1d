// The comparison metrics of `validate` (src/runtime/compare.h) on hand-made logits whose cosine,
// |delta|, KL and top-k agreement are worked out by hand; the pass rules of `validate --hf-model`
// (src/runtime/parity.h): default bounds and the greedy near-tie rule.
#include "core/error.h"
#include "runtime/compare.h"
#include "runtime/parity.h"
#include "runtime/reference.h"
#include "test_convert_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace tt;

TEST(CompareLogits, IdenticalLogitsAgreeFully) {
    const std::vector<float> ref = {0.5f, -1.0f, 2.0f, 0.0f, 3.0f, 1.0f, -2.0f, 0.25f};  // 2 positions x 4
    const LogitComparison c = compare_logits(ref.data(), ref.data(), 2, 4);
    EXPECT_EQ(c.n_positions, 2);
    EXPECT_NEAR(c.min_cosine, 1.0, 1e-12);
    EXPECT_EQ(c.max_abs_diff, 0.0);
    EXPECT_EQ(c.top1_agreement, 1.0);
    EXPECT_EQ(c.top5_agreement, 1.0);
    EXPECT_NEAR(c.mean_kl, 0.0, 1e-15);
    EXPECT_NEAR(c.max_kl, 0.0, 1e-15);
}

TEST(CompareLogits, ReversedVocabularyAtOnePosition) {
    // Position 0: ours is the reference reversed; position 1: equal. By hand at position 0:
    // cosine = (1*6 + 2*5 + 3*4 + 4*3 + 5*2 + 6*1) / (1+4+9+16+25+36) = 56/91; max |delta| = 5;
    // the reference's best token (5) is our worst, outside our top 5 -> top-1 and top-5 are 1/2.
    const std::vector<float> ref = {1, 2, 3, 4, 5, 6, 0, 0, 1, 0, 0, 0};
    const std::vector<float> got = {6, 5, 4, 3, 2, 1, 0, 0, 1, 0, 0, 0};
    const LogitComparison c = compare_logits(ref.data(), got.data(), 2, 6);
    EXPECT_NEAR(c.min_cosine, 56.0 / 91.0, 1e-9);
    EXPECT_EQ(c.min_cosine_pos, 0);
    EXPECT_DOUBLE_EQ(c.max_abs_diff, 5.0);
    EXPECT_EQ(c.max_abs_diff_pos, 0);
    EXPECT_DOUBLE_EQ(c.top1_agreement, 0.5);
    EXPECT_DOUBLE_EQ(c.top5_agreement, 0.5);
    // KL(p || reverse(p)) with p = softmax(1..6): sum_i p_i (x_i - x_{7-i}) since the normalisers
    // are equal; x_i - x_{7-i} = 2i - 7.
    double z = 0, kl = 0;
    for (int i = 1; i <= 6; ++i) z += std::exp(i);
    for (int i = 1; i <= 6; ++i) kl += std::exp(i) / z * (2 * i - 7);
    EXPECT_NEAR(c.max_kl, kl, 1e-9);
    EXPECT_EQ(c.max_kl_pos, 0);
    EXPECT_NEAR(c.mean_kl, kl / 2, 1e-9);
}

TEST(CompareLogits, SwappingTwoMinorTokensKeepsTopOneAndTopFive) {
    // 7 tokens; ours swaps the two smallest: the best token is still first (top-1 and top-5 agree)
    // but cosine and KL see the difference.
    const std::vector<float> ref = {7, 6, 5, 4, 3, 2, 1};
    const std::vector<float> got = {7, 6, 5, 4, 3, 1, 2};
    const LogitComparison c = compare_logits(ref.data(), got.data(), 1, 7);
    EXPECT_EQ(c.top1_agreement, 1.0);
    EXPECT_EQ(c.top5_agreement, 1.0);
    EXPECT_NEAR(c.min_cosine, (49 + 36 + 25 + 16 + 9 + 2 + 2) / 140.0, 1e-12);  // sum of squares 1..7 = 140
    EXPECT_DOUBLE_EQ(c.max_abs_diff, 1.0);
    EXPECT_GT(c.max_kl, 0.0);
}

TEST(CompareLogits, ScaledLogitsKeepCosineButNotKl) {
    // ref = [0, ln 2] -> p = [1/3, 2/3]; ours = 2 * ref -> q = [1/5, 4/5]. Cosine 1 (same direction),
    // KL(p||q) = 1/3 ln(5/3) + 2/3 ln(5/6), max |delta| = ln 2, top-1 agrees.
    const float l2 = float(std::log(2.0));
    const std::vector<float> ref = {0, l2};
    const std::vector<float> got = {0, 2 * l2};
    const LogitComparison c = compare_logits(ref.data(), got.data(), 1, 2);
    EXPECT_NEAR(c.min_cosine, 1.0, 1e-7);
    EXPECT_NEAR(c.max_abs_diff, std::log(2.0), 1e-7);
    EXPECT_NEAR(c.mean_kl, std::log(5.0 / 3) / 3 + 2 * std::log(5.0 / 6) / 3, 1e-7);
    EXPECT_EQ(c.top1_agreement, 1.0);
}

TEST(CompareLogits, ShiftedLogitsKeepKlButNotCosine) {
    // Adding a constant changes no probability (KL 0) but turns the vector: cosine of [1,2,3] and
    // [11,12,13] = 74 / sqrt(14 * 434).
    const std::vector<float> ref = {1, 2, 3};
    const std::vector<float> got = {11, 12, 13};
    const LogitComparison c = compare_logits(ref.data(), got.data(), 1, 3);
    EXPECT_NEAR(c.min_cosine, 74.0 / std::sqrt(14.0 * 434.0), 1e-9);
    EXPECT_NEAR(c.mean_kl, 0.0, 1e-12);
    EXPECT_DOUBLE_EQ(c.max_abs_diff, 10.0);
}

TEST(ParityThresholds, DefaultsPerProfileAndPrecision) {
    const auto safe32 = default_parity_thresholds(Profile::safe, true, true);
    EXPECT_DOUBLE_EQ(safe32.min_cosine, 0.99999);
    EXPECT_DOUBLE_EQ(safe32.max_mean_kl, 1e-4);
    const auto bal32 = default_parity_thresholds(Profile::balanced, true, true);
    EXPECT_DOUBLE_EQ(bal32.min_cosine, 0.9999);
    EXPECT_DOUBLE_EQ(bal32.max_mean_kl, 1e-3);
    for (auto p : {Profile::safe, Profile::balanced})
        for (auto [a, r] : {std::pair{false, false}, std::pair{false, true}, std::pair{true, false}}) {
            const auto t = default_parity_thresholds(p, a, r);
            EXPECT_DOUBLE_EQ(t.min_cosine, 0.999);
            EXPECT_DOUBLE_EQ(t.max_mean_kl, 1e-2);
            EXPECT_TRUE(std::isinf(t.max_abs_diff));
            EXPECT_TRUE(t.greedy);
        }
}

TEST(CheckGreedy, FullMatchPasses) {
    const std::vector<int32_t> ids = {5, 6, 7};
    const std::vector<float> margins = {1.0f, 1.0f, 1.0f};
    const GreedyCheck g = check_greedy(ids, ids, margins, 0.01);
    EXPECT_EQ(g.matched, 3);
    EXPECT_EQ(g.total, 3);
    EXPECT_TRUE(g.pass);
    EXPECT_FALSE(g.near_tie);
}

TEST(CheckGreedy, DivergenceAtANearTieIsAccepted) {
    const std::vector<int32_t> ref = {5, 6, 7, 8}, ours = {5, 6, 9, 1};
    const std::vector<float> margins = {1.0f, 1.0f, 0.004f, 1.0f};
    const GreedyCheck g = check_greedy(ours, ref, margins, 0.01);
    EXPECT_EQ(g.matched, 2);
    EXPECT_TRUE(g.near_tie);
    EXPECT_FLOAT_EQ(float(g.gap), 0.004f);
    EXPECT_TRUE(g.pass);
}

TEST(CheckGreedy, DivergenceWithAClearWinnerFails) {
    const std::vector<int32_t> ref = {5, 6, 7, 8}, ours = {5, 9, 7, 8};
    const std::vector<float> margins = {1.0f, 0.5f, 0.001f, 1.0f};
    const GreedyCheck g = check_greedy(ours, ref, margins, 0.01);
    EXPECT_EQ(g.matched, 1);
    EXPECT_FALSE(g.near_tie);
    EXPECT_FALSE(g.pass);
}

TEST(CheckGreedy, ShorterContinuationFails) {
    const std::vector<int32_t> ref = {5, 6, 7}, ours = {5, 6};
    const std::vector<float> margins = {1.0f, 1.0f, 0.0f};
    EXPECT_FALSE(check_greedy(ours, ref, margins, 0.01).pass);
}

TEST(ReferenceNoise, PassesOnlyWhenNoFartherThanTransformersBf16) {
    // ThinTensor closer to the float32 logits than transformers' bf16 run: both measures pass.
    auto n = within_reference_noise(0.9990, 1e-3, 0.9960, 4e-3);
    EXPECT_TRUE(n.cosine_ok);
    EXPECT_TRUE(n.kl_ok);
    // Farther on cosine, closer on KL: only KL passes.
    n = within_reference_noise(0.9950, 1e-3, 0.9960, 4e-3);
    EXPECT_FALSE(n.cosine_ok);
    EXPECT_TRUE(n.kl_ok);
    // Farther on both.
    n = within_reference_noise(0.9950, 5e-3, 0.9960, 4e-3);
    EXPECT_FALSE(n.cosine_ok);
    EXPECT_FALSE(n.kl_ok);
}

// A bf16 reference set that also carries the float32 logits of the same weights: the loader
// returns them beside the bf16 ones; a misshapen baseline is an error naming the tensor.
TEST(ReferenceNoise, LoaderReadsTheFloat32Baseline) {
    using namespace tt::test;
    TempDir dir;
    auto f32 = [](std::vector<float> v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); };
    auto i64 = [](std::vector<int64_t> v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8); };
    std::vector<StTensor> ts = {{"p0.input_ids", DType::i64, {3}, i64({1, 2, 3})},
                                {"p0.logits_bf16", DType::f32, {2, 2}, f32({1, 2, 3, 4})},
                                {"p0.logits_f32", DType::f32, {2, 2}, f32({1.5f, 2, 3, 4.5f})},
                                {"p0.greedy_ids", DType::i64, {1}, i64({1})},
                                {"p0.greedy_margins", DType::f32, {1}, f32({0.5f})}};
    write_safetensors(dir / "ref.safetensors", ts);
    auto refs = load_reference_set((dir / "ref.safetensors").string(), 1, "logits_bf16");
    ASSERT_EQ(refs.size(), 1u);
    EXPECT_EQ(refs[0].logits_offset, 1);
    EXPECT_EQ(refs[0].baseline_f32, (std::vector<float>{1.5f, 2, 3, 4.5f}));
    // An f32 reference has no separate baseline.
    ts[1].name = "p0.logits_x";
    write_safetensors(dir / "f32.safetensors", ts);
    EXPECT_TRUE(load_reference_set((dir / "f32.safetensors").string(), 1, "logits_f32")[0].baseline_f32.empty());
    ts[1].name = "p0.logits_bf16";
    ts[2].shape = {1, 4};
    write_safetensors(dir / "bad.safetensors", ts);
    try {
        load_reference_set((dir / "bad.safetensors").string(), 1, "logits_bf16");
        FAIL() << "a misshapen baseline was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("p0.logits_f32"), std::string::npos) << e.what();
    }
}

// NaN compares false with everything: max |delta| used to print 0 and "ok" on NaN logits. A
// non-finite logit on either side makes every metric NaN and names its position, side and token.
TEST(CompareLogits, NanInOurLogitsMakesEveryMetricNanAndNamesThePosition) {
    const std::vector<float> ref = {1, 2, 3, 4, 5, 6, 7, 8, 9};  // 3 positions x 3
    std::vector<float> got = ref;
    got[4] = NAN;  // position 1, token 1
    const LogitComparison c = compare_logits(ref.data(), got.data(), 3, 3);
    EXPECT_FALSE(c.finite());
    EXPECT_EQ(c.nonfinite_pos, 1);
    EXPECT_EQ(c.nonfinite_token, 1);
    EXPECT_FALSE(c.nonfinite_in_reference);
    for (double v : {c.min_cosine, c.max_abs_diff, c.mean_kl, c.max_kl, c.top1_agreement, c.top5_agreement})
        EXPECT_TRUE(std::isnan(v));
    EXPECT_EQ(c.min_cosine_pos, 1);
    EXPECT_EQ(c.max_abs_diff_pos, 1);
    EXPECT_EQ(c.max_kl_pos, 1);
    // A bound check written as `value <= bound` now fails, as it must.
    EXPECT_FALSE(c.max_abs_diff <= 1e-3);
    EXPECT_FALSE(c.min_cosine >= 0.999);
    EXPECT_EQ(describe_nonfinite(c, "ThinTensor's logits", "the reference's logits_f32"),
              "ThinTensor's logits hold NaN at position 1 (token 1)");
}

TEST(CompareLogits, InfInTheReferenceIsNamedAsTheReferences) {
    std::vector<float> ref = {1, 2, 3, 4, 5, 6};
    const std::vector<float> got = ref;
    ref[5] = -INFINITY;
    const LogitComparison c = compare_logits(ref.data(), got.data(), 2, 3);
    EXPECT_EQ(c.nonfinite_pos, 1);
    EXPECT_TRUE(c.nonfinite_in_reference);
    EXPECT_EQ(describe_nonfinite(c, "ours", "the reference's logits_f32"), "the reference's logits_f32 hold -inf at position 1 (token 2)");
    EXPECT_EQ(first_nonfinite(ref.data(), 6), 5);
    EXPECT_EQ(first_nonfinite(got.data(), 6), -1);
}

TEST(CheckGreedy, NanGapOrToleranceIsNoNearTie) {
    const std::vector<int32_t> ref = {5, 6}, ours = {5, 9};
    EXPECT_FALSE(check_greedy(ours, ref, std::vector<float>{1.0f, NAN}, 0.01).pass);
    EXPECT_FALSE(check_greedy(ours, ref, std::vector<float>{1.0f, 0.001f}, NAN).pass);
}

// A single reference case: greedy_prefix from the header's metadata when it says it; otherwise
// the prefixes whose reference logits pick greedy_ids[0] (here positions 1 and 3 -> prefixes 2, 4).
TEST(LoadReference, GreedyPrefixFromMetadataOrFromTheLogits) {
    using namespace tt::test;
    TempDir dir;
    auto f32 = [](std::vector<float> v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); };
    auto i64 = [](std::vector<int64_t> v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8); };
    const std::vector<StTensor> ts = {{"input_ids", DType::i64, {4}, i64({0, 1, 2, 0})},
                                      {"logits_f32", DType::f32, {4, 3}, f32({1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1})},
                                      {"greedy_ids", DType::i64, {2}, i64({2, 1})}};
    write_safetensors(dir / "plain.safetensors", ts);
    const ReferenceCase plain = load_reference((dir / "plain.safetensors").string(), "logits_f32");
    EXPECT_EQ(plain.greedy_prefix, 0);
    EXPECT_EQ(plain.greedy_prefix_candidates, (std::vector<int>{2, 4}));
    write_safetensors(dir / "meta.safetensors", ts, {{"format", "pt"}, {"greedy_prefix", "3"}});
    EXPECT_EQ(load_reference((dir / "meta.safetensors").string(), "logits_f32").greedy_prefix, 3);
    write_safetensors(dir / "bad.safetensors", ts, {{"greedy_prefix", "three"}});
    try {
        load_reference((dir / "bad.safetensors").string(), "logits_f32");
        FAIL() << "a non-numeric greedy_prefix was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("\"greedy_prefix\" must be a positive integer"), std::string::npos) << e.what();
    }
    write_safetensors(dir / "long.safetensors", ts, {{"greedy_prefix", "9"}});
    EXPECT_THROW(load_reference((dir / "long.safetensors").string(), "logits_f32"), Error);
}
