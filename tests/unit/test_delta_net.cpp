// backends/cpu/delta_net.h, the Gated DeltaNet reference: the causal conv against a naive one over
// [conv_state | x] and in pieces; the gates, q/k norm and gated RMSNorm against their formulas;
// the recurrent rule against a case worked by hand; the chunked rule against the recurrent one
// (grouped and ungrouped heads, lengths around the chunk size, several chunk sizes, a non-zero
// initial state); grouped heads against explicitly repeated ones; a sequence split over calls
// against one call. Measured differences are printed.
#include "backends/cpu/delta_net.h"

#include "core/thread_pool.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

using namespace tt;
using namespace tt::cpu;

namespace {

double silu_ref(double x) { return x / (1.0 + std::exp(-x)); }

// max |a - b| / max |b|: the error relative to the reference's scale.
double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
        scale = std::max(scale, std::abs(double(b[i])));
    }
    return diff / std::max(scale, 1e-30);
}

std::vector<float> normal(std::mt19937& rng, size_t n, float sd) {
    std::normal_distribution<float> dist(0.0f, sd);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

// One DeltaNet input as the layer produces it: q/k normalised by delta_net_qk_norm, g in
// [-2, -0.01] and beta in (0, 1), and a non-zero state to start from. Value head 0 decays slowly
// (g in [-0.05, -0.01]) so the state carried across chunks still weighs in after 200 tokens; the
// others use the whole range.
struct Inputs {
    std::vector<float> qkv, g, beta, state;
};

Inputs make_inputs(const DeltaNetDims& d, int n, unsigned seed) {
    std::mt19937 rng(seed);
    Inputs in;
    in.qkv = normal(rng, size_t(n) * size_t(d.conv_dim()), 1.0f);
    delta_net_qk_norm(d, in.qkv.data(), n);
    std::uniform_real_distribution<float> slow(-0.05f, -0.01f), any(-2.0f, -0.01f), unit(0.02f, 0.98f);
    for (int t = 0; t < n; ++t)
        for (int h = 0; h < d.n_v_heads; ++h) {
            in.g.push_back(h == 0 ? slow(rng) : any(rng));
            in.beta.push_back(unit(rng));
        }
    in.state = normal(rng, d.state_floats(), 0.5f);
    return in;
}

struct Result {
    std::vector<float> out, state;
};

Result run_recurrent(const DeltaNetDims& d, const Inputs& in, int n, ThreadPool* pool = nullptr) {
    Result r{std::vector<float>(size_t(n) * size_t(d.value_dim())), in.state};
    gated_delta_rule_recurrent(d, in.qkv.data(), in.g.data(), in.beta.data(), n, r.state.data(), r.out.data(), pool);
    return r;
}

Result run_chunked(const DeltaNetDims& d, const Inputs& in, int n, int chunk, ThreadPool* pool = nullptr) {
    Result r{std::vector<float>(size_t(n) * size_t(d.value_dim())), in.state};
    gated_delta_rule_chunked(d, in.qkv.data(), in.g.data(), in.beta.data(), n, chunk, r.state.data(), r.out.data(),
                             pool);
    return r;
}

DeltaNetDims dims(int hk, int hv) { return {hk, hv, 16, 8, 4}; }

}  // namespace

TEST(DeltaNet, CausalConvMatchesNaiveConvOverStateAndInput) {
    const int conv_dim = 5, n = 11;
    for (int kernel : {2, 4}) {
        std::mt19937 rng(7u + unsigned(kernel));
        const std::vector<float> x = normal(rng, size_t(n) * conv_dim, 1.0f);
        const std::vector<float> w = normal(rng, size_t(conv_dim) * size_t(kernel), 0.5f);
        const std::vector<float> state0 = normal(rng, size_t(conv_dim) * size_t(kernel - 1), 1.0f);
        // Naive: input at time tau < 0 is the state's column K-1+tau (oldest first), else x[tau].
        auto input = [&](int tau, int c) {
            return tau >= 0 ? double(x[size_t(tau) * conv_dim + size_t(c)])
                            : double(state0[size_t(c) * size_t(kernel - 1) + size_t(kernel - 1 + tau)]);
        };
        std::vector<float> want(size_t(n) * conv_dim), want_state(state0.size());
        for (int t = 0; t < n; ++t)
            for (int c = 0; c < conv_dim; ++c) {
                double acc = 0.0;
                for (int j = 0; j < kernel; ++j)
                    acc += double(w[size_t(c) * size_t(kernel) + size_t(j)]) * input(t - (kernel - 1) + j, c);
                want[size_t(t) * conv_dim + size_t(c)] = float(silu_ref(acc));
            }
        for (int c = 0; c < conv_dim; ++c)
            for (int j = 0; j < kernel - 1; ++j)
                want_state[size_t(c) * size_t(kernel - 1) + size_t(j)] = float(input(n - (kernel - 1) + j, c));

        // All n tokens in one call (prefill).
        std::vector<float> y(want.size()), state = state0;
        causal_conv1d_silu(x.data(), n, w.data(), conv_dim, kernel, state.data(), y.data());
        const double d_out = max_rel_diff(y, want);
        EXPECT_LT(d_out, 1e-6) << "kernel " << kernel;
        EXPECT_EQ(state, want_state) << "kernel " << kernel;

        // The same tokens as 1 + 3 + 7 (a piece shorter than K-1 keeps part of the old state).
        std::vector<float> y_parts(want.size()), state_parts = state0;
        int t0 = 0;
        for (int len : {1, 3, n - 4}) {
            causal_conv1d_silu(x.data() + size_t(t0) * conv_dim, len, w.data(), conv_dim, kernel, state_parts.data(),
                               y_parts.data() + size_t(t0) * conv_dim);
            t0 += len;
        }
        EXPECT_EQ(y_parts, y) << "kernel " << kernel;
        EXPECT_EQ(state_parts, want_state) << "kernel " << kernel;
        fmt::print("conv K={}: max rel diff vs naive {:.3g}\n", kernel, d_out);
    }
}

TEST(DeltaNet, GatesMatchTheirFormulas) {
    const int hv = 3, n = 4;
    // a + dt_bias spans softplus' regimes: very negative, moderate, and above torch's threshold 20
    // (in f32 the threshold shows only once exp(x) overflows, hence 100).
    const std::vector<float> a = {-30.0f, -1.5f, 0.0f, 0.7f, 2.5f, 19.0f, 25.0f, -4.0f, 1.0f, 3.0f, -0.2f, 100.0f};
    const std::vector<float> b = {-6.0f, -1.0f, 0.0f, 0.5f, 2.0f, 8.0f, -0.3f, 0.3f, 1.2f, -2.2f, 4.0f, -4.0f};
    const std::vector<float> a_log = {std::log(0.5f), 0.0f, std::log(8.0f)};
    const std::vector<float> dt_bias = {1.0f, -0.5f, 0.25f};
    std::vector<float> g(a.size()), beta(a.size());
    delta_net_gates(a.data(), b.data(), a_log.data(), dt_bias.data(), hv, n, g.data(), beta.data());
    for (int t = 0; t < n; ++t)
        for (int h = 0; h < hv; ++h) {
            const size_t i = size_t(t) * hv + size_t(h);
            const double x = double(a[i]) + double(dt_bias[size_t(h)]);
            const double softplus = x > 20.0 ? x : std::log1p(std::exp(x));
            const double g_want = -std::exp(double(a_log[size_t(h)])) * softplus;
            const double beta_want = 1.0 / (1.0 + std::exp(-double(b[i])));
            EXPECT_NEAR(g[i], g_want, 1e-6 * std::abs(g_want) + 1e-30) << "t " << t << " h " << h;
            EXPECT_NEAR(beta[i], beta_want, 1e-6) << "t " << t << " h " << h;
            EXPECT_LE(g[i], 0.0f);
        }
}

TEST(DeltaNet, QkNormIsL2NormThenQueryScale) {
    const DeltaNetDims d = dims(2, 4);
    const int n = 3;
    std::mt19937 rng(3);
    const std::vector<float> raw = normal(rng, size_t(n) * size_t(d.conv_dim()), 2.0f);
    std::vector<float> qkv = raw;
    delta_net_qk_norm(d, qkv.data(), n);
    const int dk = d.k_head_dim;
    for (int t = 0; t < n; ++t) {
        const size_t row = size_t(t) * size_t(d.conv_dim());
        for (int head = 0; head < 2 * d.n_k_heads; ++head) {
            const size_t off = row + size_t(head) * size_t(dk);
            double ss = 0.0;
            for (int i = 0; i < dk; ++i) ss += double(raw[off + size_t(i)]) * double(raw[off + size_t(i)]);
            // l2norm, then query * dk^-0.5 for the q heads only.
            const double scale = (head < d.n_k_heads ? 1.0 / std::sqrt(double(dk)) : 1.0) / std::sqrt(ss + 1e-6);
            for (int i = 0; i < dk; ++i)
                EXPECT_NEAR(qkv[off + size_t(i)], double(raw[off + size_t(i)]) * scale, 1e-6)
                    << "t " << t << " head " << head;
        }
        for (int i = 2 * d.key_dim(); i < d.conv_dim(); ++i) EXPECT_EQ(qkv[row + size_t(i)], raw[row + size_t(i)]);
    }
}

TEST(DeltaNet, GatedRmsNormMatchesItsFormula) {
    const int n = 128;
    const float eps = 1e-6f;
    std::mt19937 rng(5);
    const std::vector<float> x = normal(rng, n, 0.3f), z = normal(rng, n, 1.5f);
    std::vector<float> w = normal(rng, n, 0.1f);
    for (auto& v : w) v += 1.0f;
    double ss = 0.0;
    for (float v : x) ss += double(v) * double(v);
    const double inv = 1.0 / std::sqrt(ss / n + eps);
    std::vector<float> want(n);
    for (size_t i = 0; i < size_t(n); ++i) want[i] = float(double(x[i]) * inv * double(w[i]) * silu_ref(z[i]));

    std::vector<float> y(n);
    gated_rmsnorm(x.data(), z.data(), w.data(), eps, y.data(), n);
    const double diff = max_rel_diff(y, want);
    EXPECT_LT(diff, 1e-6);
    std::vector<float> in_place = x;
    gated_rmsnorm(in_place.data(), z.data(), w.data(), eps, in_place.data(), n);
    EXPECT_EQ(in_place, y);
    fmt::print("gated_rmsnorm: max rel diff vs formula {:.3g}\n", diff);
}

// Hk = Hv = 1, dk = dv = 2, two tokens, worked by hand from the update rule
//   S = S * exp(g);  kv_mem = S^T k;  delta = (v - kv_mem) * beta;  S += k delta^T;  o = S^T q
// (S[i][j], i over dk). q is unit here: its dk^-0.5 is delta_net_qk_norm's job, not the rule's.
//   S0 = [[0.2, 0], [0, -0.4]]
// token 1: k = (1, 0), v = (1, 2), q = (0.6, 0.8), exp(g) = 0.5, beta = 0.5
//   S = [[0.1, 0], [0, -0.2]];  kv_mem = (0.1, 0);  delta = (0.9, 2) * 0.5 = (0.45, 1)
//   S = [[0.55, 1], [0, -0.2]];  o = 0.6 * (0.55, 1) + 0.8 * (0, -0.2) = (0.33, 0.44)
// token 2: k = (0.6, 0.8), v = (-1, 0.5), q = (0, 1), exp(g) = 0.8, beta = 0.25
//   S = [[0.44, 0.8], [0, -0.16]];  kv_mem = 0.6 * (0.44, 0.8) + 0.8 * (0, -0.16) = (0.264, 0.352)
//   delta = (-1.264, 0.148) * 0.25 = (-0.316, 0.037)
//   S = [[0.44 - 0.1896, 0.8 + 0.0222], [-0.2528, -0.16 + 0.0296]] = [[0.2504, 0.8222], [-0.2528, -0.1304]]
//   o = S^T q = (-0.2528, -0.1304)
TEST(DeltaNet, RecurrentRuleMatchesHandComputedCase) {
    const DeltaNetDims d{1, 1, 2, 2, 4};
    Inputs in;
    // Each row is [q | k | v].
    in.qkv = {0.6f, 0.8f, 1.0f, 0.0f, 1.0f, 2.0f,  //
              0.0f, 1.0f, 0.6f, 0.8f, -1.0f, 0.5f};
    in.g = {std::log(0.5f), std::log(0.8f)};
    in.beta = {0.5f, 0.25f};
    in.state = {0.2f, 0.0f, 0.0f, -0.4f};
    const std::vector<float> want_out = {0.33f, 0.44f, -0.2528f, -0.1304f};
    const std::vector<float> want_state = {0.2504f, 0.8222f, -0.2528f, -0.1304f};

    const Result rec = run_recurrent(d, in, 2);
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_NEAR(rec.out[i], want_out[i], 1e-6) << "out " << i;
        EXPECT_NEAR(rec.state[i], want_state[i], 1e-6) << "state " << i;
    }
    // The chunked form on the same case: both tokens in one chunk, and one token per chunk.
    for (int chunk : {64, 2, 1}) {
        const Result chk = run_chunked(d, in, 2, chunk);
        for (size_t i = 0; i < 4; ++i) {
            EXPECT_NEAR(chk.out[i], want_out[i], 1e-6) << "chunk " << chunk << " out " << i;
            EXPECT_NEAR(chk.state[i], want_state[i], 1e-6) << "chunk " << chunk << " state " << i;
        }
    }
}

// Grouped heads are transformers' repeat_interleave: Hk = 2, Hv = 4 gives the numbers of Hk = Hv = 4
// with q/k heads 0, 0, 1, 1 written out (value head h reads q/k head h / 2, not h % 2).
TEST(DeltaNet, GroupedHeadsAreRepeatInterleave) {
    const DeltaNetDims grouped = dims(2, 4), full = dims(4, 4);
    const int n = 70, group = grouped.n_v_heads / grouped.n_k_heads, dk = grouped.k_head_dim;
    const Inputs in = make_inputs(grouped, n, 9);
    Inputs rep = in;
    rep.qkv.clear();
    for (int t = 0; t < n; ++t) {
        const float* row = in.qkv.data() + size_t(t) * size_t(grouped.conv_dim());
        for (int part = 0; part < 2; ++part)  // q heads, then k heads
            for (int h = 0; h < full.n_k_heads; ++h) {
                const float* src = row + size_t(part * grouped.key_dim() + (h / group) * dk);
                rep.qkv.insert(rep.qkv.end(), src, src + dk);
            }
        rep.qkv.insert(rep.qkv.end(), row + 2 * grouped.key_dim(), row + grouped.conv_dim());
    }
    ASSERT_EQ(rep.qkv.size(), size_t(n) * size_t(full.conv_dim()));
    const Result g_rec = run_recurrent(grouped, in, n), f_rec = run_recurrent(full, rep, n);
    EXPECT_EQ(g_rec.out, f_rec.out);
    EXPECT_EQ(g_rec.state, f_rec.state);
    const Result g_chk = run_chunked(grouped, in, n, 64), f_chk = run_chunked(full, rep, n, 64);
    EXPECT_EQ(g_chk.out, f_chk.out);
    EXPECT_EQ(g_chk.state, f_chk.state);
}

TEST(DeltaNet, ChunkedMatchesRecurrent) {
    ThreadPool pool(3);
    double worst_out = 0.0, worst_state = 0.0;
    for (const DeltaNetDims& d : {dims(2, 4), dims(4, 4)})
        for (int n : {1, 2, 63, 64, 65, 127, 128, 129, 200})
            for (int chunk : {64, 16, 7}) {
                const Inputs in = make_inputs(d, n, unsigned(1000 * d.n_k_heads + n));
                const Result rec = run_recurrent(d, in, n);
                const Result chk = run_chunked(d, in, n, chunk);
                const double d_out = max_rel_diff(chk.out, rec.out), d_state = max_rel_diff(chk.state, rec.state);
                EXPECT_LT(d_out, 1e-5) << "Hk " << d.n_k_heads << " n " << n << " chunk " << chunk;
                EXPECT_LT(d_state, 1e-5) << "Hk " << d.n_k_heads << " n " << n << " chunk " << chunk;
                worst_out = std::max(worst_out, d_out);
                worst_state = std::max(worst_state, d_state);
                // Heads are independent: spreading them over a pool changes no bit.
                const Result chk_pool = run_chunked(d, in, n, chunk, &pool);
                EXPECT_EQ(chk_pool.out, chk.out);
                EXPECT_EQ(chk_pool.state, chk.state);
                if (chunk == 64) {
                    const Result rec_pool = run_recurrent(d, in, n, &pool);
                    EXPECT_EQ(rec_pool.out, rec.out);
                    EXPECT_EQ(rec_pool.state, rec.state);
                }
            }
    fmt::print("chunked vs recurrent: max rel diff out {:.3g}, state {:.3g}\n", worst_out, worst_state);
}

TEST(DeltaNet, SequenceSplitOverCallsMatchesOneCall) {
    const DeltaNetDims d = dims(2, 4);
    const int n = 150, chunk = 64;
    const Inputs in = make_inputs(d, n, 42);
    const Result whole = run_chunked(d, in, n, chunk);
    const size_t row = size_t(d.conv_dim()), hv = size_t(d.n_v_heads), vd = size_t(d.value_dim());
    double worst = 0.0;
    for (int first : {1, 37, 64, 100, 149}) {
        // Prefill `first` tokens chunked, then the rest chunked from the carried state.
        Result split{std::vector<float>(whole.out.size()), in.state};
        gated_delta_rule_chunked(d, in.qkv.data(), in.g.data(), in.beta.data(), first, chunk, split.state.data(),
                                 split.out.data(), nullptr);
        gated_delta_rule_chunked(d, in.qkv.data() + size_t(first) * row, in.g.data() + size_t(first) * hv,
                                 in.beta.data() + size_t(first) * hv, n - first, chunk, split.state.data(),
                                 split.out.data() + size_t(first) * vd, nullptr);
        const double d_out = max_rel_diff(split.out, whole.out), d_state = max_rel_diff(split.state, whole.state);
        EXPECT_LT(d_out, 1e-5) << "first " << first;
        EXPECT_LT(d_state, 1e-5) << "first " << first;
        worst = std::max({worst, d_out, d_state});
    }
    // The serving pattern: prefill n-1 tokens chunked, decode the last one recurrently.
    Result decode{std::vector<float>(whole.out.size()), in.state};
    gated_delta_rule_chunked(d, in.qkv.data(), in.g.data(), in.beta.data(), n - 1, chunk, decode.state.data(),
                             decode.out.data(), nullptr);
    gated_delta_rule_recurrent(d, in.qkv.data() + size_t(n - 1) * row, in.g.data() + size_t(n - 1) * hv,
                               in.beta.data() + size_t(n - 1) * hv, 1, decode.state.data(),
                               decode.out.data() + size_t(n - 1) * vd, nullptr);
    const double d_decode = std::max(max_rel_diff(decode.out, whole.out), max_rel_diff(decode.state, whole.state));
    EXPECT_LT(d_decode, 1e-5);
    // Token by token, the recurrent form is the same computation however the calls split it.
    const Result rec = run_recurrent(d, in, n);
    Result rec_split{std::vector<float>(whole.out.size()), in.state};
    for (int t = 0; t < n; ++t)
        gated_delta_rule_recurrent(d, in.qkv.data() + size_t(t) * row, in.g.data() + size_t(t) * hv,
                                   in.beta.data() + size_t(t) * hv, 1, rec_split.state.data(),
                                   rec_split.out.data() + size_t(t) * vd, nullptr);
    EXPECT_EQ(rec_split.out, rec.out);
    EXPECT_EQ(rec_split.state, rec.state);
    fmt::print("split over calls: max rel diff {:.3g}; chunked prefill + recurrent decode {:.3g}\n", worst, d_decode);
}
