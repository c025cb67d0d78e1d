// Sampler: greedy, seeds, top-k/top-p/min-p on hand-made logits, temperature statistics.
#include "runtime/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

using namespace tt;

namespace {
SamplerConfig plain(float temperature) {
    SamplerConfig c;
    c.temperature = temperature;
    c.top_k = 0;
    c.top_p = 1.0f;
    c.min_p = 0.0f;
    c.repeat_penalty = 1.0f;
    c.seed = 1234;
    return c;
}
std::vector<float> logits_of(const std::vector<double>& probs) {
    std::vector<float> l;
    for (double p : probs) l.push_back(float(std::log(p)));
    return l;
}
}  // namespace

TEST(Sampler, TemperatureZeroIsArgmax) {
    Sampler s(plain(0.0f));
    const std::vector<float> l = {0.1f, 2.0f, -1.0f, 1.9f};
    for (int i = 0; i < 10; ++i) EXPECT_EQ(s.sample(l, {}), 1);
}

TEST(Sampler, GreedyIsTheFirstLargestAsMaxElement) {
    // The greedy fast path (no copy, two passes) against std::max_element: ties, negatives, NaNs.
    Sampler s(plain(0.0f));
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> level(-4, 4);
    for (int t = 0; t < 200; ++t) {
        std::vector<float> l(size_t(1 + t * 7));
        for (auto& v : l) v = float(level(rng)) * 0.5f;  // few distinct values: many ties
        if (t % 5 == 1) l[size_t(t) % l.size()] = std::nanf("");
        const int want = int(std::max_element(l.begin(), l.end()) - l.begin());
        EXPECT_EQ(s.sample(l, {}), want) << "case " << t;
    }
    const std::vector<float> nan_first = {std::nanf(""), 3.0f, 5.0f};
    EXPECT_EQ(s.sample(nan_first, {}), int(std::max_element(nan_first.begin(), nan_first.end()) - nan_first.begin()));
}

TEST(Sampler, TopKOneIsGreedy) {
    SamplerConfig c = plain(1.5f);
    c.top_k = 1;
    Sampler s(c);
    const std::vector<float> l = {0.5f, 0.1f, 3.0f, 2.9f, -2.0f};
    for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(l, {}), 2);
}

TEST(Sampler, SameSeedSameTokens) {
    const std::vector<float> l = logits_of({0.3, 0.25, 0.2, 0.15, 0.1});
    Sampler a(plain(1.0f)), b(plain(1.0f));
    std::vector<int32_t> ta, tb;
    for (int i = 0; i < 200; ++i) {
        ta.push_back(a.sample(l, {}));
        tb.push_back(b.sample(l, {}));
    }
    EXPECT_EQ(ta, tb);
    SamplerConfig other = plain(1.0f);
    other.seed = 99;
    Sampler c(other);
    std::vector<int32_t> tc;
    for (int i = 0; i < 200; ++i) tc.push_back(c.sample(l, {}));
    EXPECT_NE(ta, tc);
}

TEST(Sampler, TopPKeepsSmallestPrefixReachingMass) {
    SamplerConfig c = plain(1.0f);
    c.top_p = 0.7f;
    Sampler s(c);
    // 0.4 + 0.3 = 0.7 reaches top_p: the candidates are tokens 0 and 1, renormalized.
    const auto cand = s.candidates(logits_of({0.4, 0.3, 0.2, 0.1}));
    ASSERT_EQ(cand.size(), 2u);
    EXPECT_EQ(cand[0].first, 0);
    EXPECT_EQ(cand[1].first, 1);
    EXPECT_NEAR(cand[0].second, 0.4 / 0.7, 1e-5);
    EXPECT_NEAR(cand[1].second, 0.3 / 0.7, 1e-5);
    c.top_p = 0.71f;
    const auto cand3 = Sampler(c).candidates(logits_of({0.4, 0.3, 0.2, 0.1}));
    EXPECT_EQ(cand3.size(), 3u);
}

TEST(Sampler, MinPDropsUnlikelyTokens) {
    SamplerConfig c = plain(1.0f);
    c.min_p = 0.5f;
    // p_max = 0.5: tokens below 0.25 go.
    const auto cand = Sampler(c).candidates(logits_of({0.5, 0.26, 0.14, 0.1}));
    ASSERT_EQ(cand.size(), 2u);
    EXPECT_NEAR(cand[0].second, 0.5 / 0.76, 1e-5);
}

TEST(Sampler, TopKKeepsKLargest) {
    SamplerConfig c = plain(1.0f);
    c.top_k = 2;
    const auto cand = Sampler(c).candidates({1.0f, 5.0f, 3.0f, -1.0f});
    ASSERT_EQ(cand.size(), 2u);
    EXPECT_EQ(cand[0].first, 1);
    EXPECT_EQ(cand[1].first, 2);
}

TEST(Sampler, RepetitionPenaltyAsTransformers) {
    std::vector<float> l = {2.0f, -2.0f, 1.0f};
    const std::vector<int32_t> hist = {0, 1, 1};
    Sampler::penalize(l, hist, 2.0f);
    EXPECT_FLOAT_EQ(l[0], 1.0f);   // positive: divided
    EXPECT_FLOAT_EQ(l[1], -4.0f);  // negative: multiplied, once despite two occurrences
    EXPECT_FLOAT_EQ(l[2], 1.0f);   // not in the history
}

// Draw frequencies match softmax(logits / T) within a few standard errors, and a higher
// temperature flattens the distribution.
TEST(Sampler, TemperatureShapesTheDistribution) {
    const std::vector<float> l = {2.0f, 1.0f, 0.0f};
    constexpr int n = 40000;
    std::map<double, double> top_freq;
    for (double t : {0.5, 1.0, 2.0}) {
        Sampler s(plain(float(t)));
        std::vector<int> count(3);
        for (int i = 0; i < n; ++i) ++count[size_t(s.sample(l, {}))];
        double z = 0;
        for (float v : l) z += std::exp(v / t);
        for (int k = 0; k < 3; ++k) {
            const double p = std::exp(l[size_t(k)] / t) / z;
            const double se = std::sqrt(p * (1 - p) / n);
            EXPECT_NEAR(double(count[size_t(k)]) / n, p, 5 * se) << "T=" << t << " token " << k;
        }
        top_freq[t] = double(count[0]) / n;
    }
    EXPECT_GT(top_freq[0.5], top_freq[1.0]);
    EXPECT_GT(top_freq[1.0], top_freq[2.0]);
}
