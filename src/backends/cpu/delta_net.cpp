// The Gated DeltaNet reference operators (see delta_net.h): each function is one step of
// transformers' Qwen3_5GatedDeltaNet.forward, written as plain loops in f32 with double
// accumulators for the dot products, so that the CUDA kernels have a reference whose own rounding
// is small beside theirs.
#include "backends/cpu/delta_net.h"

#include "backends/cpu/moe.h"
#include "backends/cpu/ops.h"
#include "core/error.h"
#include "core/thread_pool.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace tt::cpu {

namespace {

// One value head's view of a token's inputs: q, k of its q/k head (repeat_interleave), its v.
struct HeadInputs {
    const float* q;  // [dk], after delta_net_qk_norm
    const float* k;  // [dk]
    const float* v;  // [dv]
};

HeadInputs head_inputs(const DeltaNetDims& d, const float* qkv, int t, int h) {
    // query, key = (x.repeat_interleave(num_v_heads // num_k_heads, dim=2) ...): value head h reads
    // q/k head h / (Hv/Hk).
    const int hk = h / (d.n_v_heads / d.n_k_heads);
    const float* row = qkv + size_t(t) * size_t(d.conv_dim());
    return {row + size_t(hk) * size_t(d.k_head_dim), row + size_t(d.key_dim()) + size_t(hk) * size_t(d.k_head_dim),
            row + size_t(2 * d.key_dim()) + size_t(h) * size_t(d.v_head_dim)};
}

// Runs fn(h) for every value head, spread over the pool when there is one. Heads are independent
// (each owns its slice of the state and of the output), so the split changes no number.
void for_each_value_head(int n_v_heads, ThreadPool* pool, const std::function<void(int)>& fn) {
    if (!pool) {
        for (int h = 0; h < n_v_heads; ++h) fn(h);
        return;
    }
    pool->parallel_for(size_t(n_v_heads), [&](size_t h0, size_t h1) {
        for (size_t h = h0; h < h1; ++h) fn(int(h));
    });
}

void check_dims(const DeltaNetDims& d) {
    TT_ASSERT(d.n_k_heads > 0 && d.n_v_heads > 0 && d.n_v_heads % d.n_k_heads == 0,
              "DeltaNet value heads {} are not a multiple of key heads {}", d.n_v_heads, d.n_k_heads);
    TT_ASSERT(d.k_head_dim > 0 && d.v_head_dim > 0);
}

// torch's F.softplus with beta 1, threshold 20: the input itself above the threshold.
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

}  // namespace

void causal_conv1d_silu(const float* x, int n, const float* w, int conv_dim, int kernel, float* conv_state, float* y) {
    TT_ASSERT(kernel >= 1 && n >= 0);
    const size_t nt = size_t(n), dim = size_t(conv_dim), taps = size_t(kernel);
    const size_t hist = taps - 1;  // past inputs the conv sees: conv_state's length per channel
    std::vector<float> window(hist + nt);
    for (size_t c = 0; c < dim; ++c) {
        float* state_c = conv_state + c * hist;
        // causal_conv1d_update: hidden_states_new = torch.cat([conv_state, hidden_states], dim=-1)
        for (size_t j = 0; j < hist; ++j) window[j] = state_c[j];
        for (size_t t = 0; t < nt; ++t) window[hist + t] = x[t * dim + c];
        // F.conv1d(..., groups=hidden_size) is a cross-correlation: w[c, K-1] weighs the newest input.
        const float* w_c = w + c * taps;
        for (size_t t = 0; t < nt; ++t) {
            double acc = 0.0;
            for (size_t j = 0; j < taps; ++j) acc += double(w_c[j]) * double(window[t + j]);
            // ACT2FN["silu"](out)
            y[t * dim + c] = silu(float(acc));
        }
        // conv_state.copy_(hidden_states_new[:, :, -state_len:]): the last K-1 inputs, which
        // reach back into the old state when n < K-1.
        for (size_t j = 0; j < hist; ++j) state_c[j] = window[nt + j];
    }
}

void delta_net_qk_norm(const DeltaNetDims& d, float* qkv, int n) {
    check_dims(d);
    const int dk = d.k_head_dim;
    // query = query * query.shape[-1] ** -0.5, after l2norm (torch_chunk_gated_delta_rule).
    const float q_scale = 1.0f / std::sqrt(float(dk));
    for (int t = 0; t < n; ++t) {
        float* row = qkv + size_t(t) * size_t(d.conv_dim());
        // The first 2*Hk heads of the row are q's then k's, all dk wide; v follows, untouched.
        for (int head = 0; head < 2 * d.n_k_heads; ++head) {
            float* x = row + size_t(head) * size_t(dk);
            // l2norm: x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + 1e-6)
            double ss = 0.0;
            for (int i = 0; i < dk; ++i) ss += double(x[i]) * double(x[i]);
            float inv = float(1.0 / std::sqrt(ss + 1e-6));
            if (head < d.n_k_heads) inv *= q_scale;
            for (int i = 0; i < dk; ++i) x[i] *= inv;
        }
    }
}

void delta_net_gates(const float* a, const float* b, const float* a_log, const float* dt_bias, int n_v_heads, int n,
                     float* g, float* beta) {
    for (int t = 0; t < n; ++t)
        for (int h = 0; h < n_v_heads; ++h) {
            const size_t i = size_t(t) * size_t(n_v_heads) + size_t(h);
            // beta = b.sigmoid()
            beta[i] = sigmoid(b[i]);
            // g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias)
            g[i] = -std::exp(a_log[h]) * softplus(a[i] + dt_bias[h]);
        }
}

void gated_delta_rule_recurrent(const DeltaNetDims& d, const float* qkv, const float* g, const float* beta, int n,
                                float* state, float* out, ThreadPool* pool) {
    check_dims(d);
    const size_t hv = size_t(d.n_v_heads), dk = size_t(d.k_head_dim), dv = size_t(d.v_head_dim);
    for_each_value_head(d.n_v_heads, pool, [&](int h) {
        float* s = state + size_t(h) * dk * dv;  // S[i][j] = s[i * dv + j]
        std::vector<double> acc(dv);
        // torch_recurrent_gated_delta_rule: for i in range(sequence_length)
        for (int t = 0; t < n; ++t) {
            const HeadInputs x = head_inputs(d, qkv, t, h);
            const size_t gi = size_t(t) * hv + size_t(h);
            // last_recurrent_state = last_recurrent_state * decay_t
            const float decay = std::exp(g[gi]);
            for (size_t e = 0; e < dk * dv; ++e) s[e] *= decay;
            // kv_mem = (last_recurrent_state * k_t.unsqueeze(-1)).sum(dim=-2): S^T k
            std::fill(acc.begin(), acc.end(), 0.0);
            for (size_t i = 0; i < dk; ++i)
                for (size_t j = 0; j < dv; ++j) acc[j] += double(s[i * dv + j]) * double(x.k[i]);
            // delta = (v_t - kv_mem) * beta_t;
            // last_recurrent_state = last_recurrent_state + k_t.unsqueeze(-1) * delta.unsqueeze(-2)
            for (size_t j = 0; j < dv; ++j) {
                const float delta = (x.v[j] - float(acc[j])) * beta[gi];
                for (size_t i = 0; i < dk; ++i) s[i * dv + j] += x.k[i] * delta;
            }
            // core_attn_out[:, :, i] = (last_recurrent_state * q_t.unsqueeze(-1)).sum(dim=-2): S^T q
            std::fill(acc.begin(), acc.end(), 0.0);
            for (size_t i = 0; i < dk; ++i)
                for (size_t j = 0; j < dv; ++j) acc[j] += double(s[i * dv + j]) * double(x.q[i]);
            float* o = out + gi * dv;
            for (size_t j = 0; j < dv; ++j) o[j] = float(acc[j]);
        }
    });
}

// note on the chunked form. Within a chunk of L tokens starting from state S, with c_t the
// cumulative log decay up to token t of the chunk, unrolling the recurrence gives the correction
// each token writes into the state, u'_t = beta_t (v_t - (exp(g_t) S_{t-1})^T k_t), as the solution
// of a unit lower triangular system:
//   u'_t + sum_{j<t} beta_t (k_t . k_j) exp(c_t - c_j) u'_j = beta_t v_t - beta_t exp(c_t) S^T k_t.
// It is linear in the right-hand side, so it splits into u = (I + A)^-1 (beta v) and
// w = (I + A)^-1 (beta exp(c) k), with A[t][j] = beta_t (k_t . k_j) exp(c_t - c_j) for j < t, and
// u' = u - w S. transformers calls I + A the ut_system and solves it with
// torch.linalg.solve_triangular(..., upper=False, unitriangular=True): the diagonal it stores is
// ignored (taken as 1) and the strictly lower part enters with a plus sign, as here. The outputs
// and the next state then follow from S and u' by matrix products:
//   o_t = exp(c_t) S^T q_t + sum_{j<=t} (q_t . k_j) exp(c_t - c_j) u'_j,
//   S  <- exp(c_L) S + sum_t exp(c_L - c_t) k_t u'_t^T.
void gated_delta_rule_chunked(const DeltaNetDims& d, const float* qkv, const float* g, const float* beta, int n,
                              int chunk, float* state, float* out, ThreadPool* pool) {
    check_dims(d);
    TT_ASSERT(chunk >= 1);
    const size_t hv = size_t(d.n_v_heads), dk = size_t(d.k_head_dim), dv = size_t(d.v_head_dim);
    const size_t cs = size_t(chunk);
    for_each_value_head(d.n_v_heads, pool, [&](int h) {
        float* s = state + size_t(h) * dk * dv;  // S[i][j] = s[i * dv + j]
        // One chunk's intermediates, token t of the chunk at row t.
        std::vector<double> c(cs);           // cum_decay
        std::vector<float> a(cs * cs);       // ut_system's strictly lower part, [chunk, chunk]
        std::vector<float> u(cs * dv);       // new_values, then v_new, [chunk, dv]
        std::vector<float> w(cs * dk);       // k_cumdecay, [chunk, dk]
        std::vector<HeadInputs> x(cs);
        std::vector<double> b(cs);           // beta
        std::vector<double> acc(dv);
        // for i in range(num_chunks), the last chunk possibly partial.
        // note: transformers pads the sequence to a multiple of chunk_size with zero q, k, v, beta
        // and g. Padded tokens have zero keys, so they write nothing into the state and, being
        // later, are not read by the real tokens; g = 0 leaves cum_decay[-1] at the last real
        // token's value. A chunk of the L < chunk real tokens alone gives the same numbers.
        for (int t0 = 0; t0 < n; t0 += chunk) {
            const size_t len = size_t(std::min(chunk, n - t0));
            // cum_decay = decay.cumsum(dim=3)
            double cum = 0.0;
            for (size_t t = 0; t < len; ++t) {
                const size_t gi = (size_t(t0) + t) * hv + size_t(h);
                cum += double(g[gi]);
                c[t] = cum;
                b[t] = double(beta[gi]);
                x[t] = head_inputs(d, qkv, t0 + int(t), h);
            }
            const double c_last = c[len - 1];

            // ut_system = (k_beta @ key.transpose(-1, -2)) * pairwise_decay, below the diagonal;
            // pairwise_decay = exp(cum_decay_i - cum_decay_j), masked above it.
            for (size_t t = 0; t < len; ++t)
                for (size_t j = 0; j < t; ++j) {
                    double kk = 0.0;
                    for (size_t i = 0; i < dk; ++i) kk += double(x[t].k[i]) * double(x[j].k[i]);
                    a[t * cs + j] = float(b[t] * kk * std::exp(c[t] - c[j]));
                }

            // new_values = solve_triangular(ut_system, v_beta, upper=False, unitriangular=True) and
            // k_cumdecay = solve_triangular(ut_system, k_beta * cum_decay.exp(), ...): forward
            // substitution, row t from the rows before it.
            for (size_t t = 0; t < len; ++t) {
                const float* a_t = &a[t * cs];
                for (size_t j = 0; j < dv; ++j) {
                    double r = b[t] * double(x[t].v[j]);
                    for (size_t p = 0; p < t; ++p) r -= double(a_t[p]) * double(u[p * dv + j]);
                    u[t * dv + j] = float(r);
                }
                const double b_decay = b[t] * std::exp(c[t]);
                for (size_t i = 0; i < dk; ++i) {
                    double r = b_decay * double(x[t].k[i]);
                    for (size_t p = 0; p < t; ++p) r -= double(a_t[p]) * double(w[p * dk + i]);
                    w[t * dk + i] = float(r);
                }
            }

            // v_new = new_values - k_cumdecay @ last_recurrent_state, in place in u.
            for (size_t t = 0; t < len; ++t) {
                std::fill(acc.begin(), acc.end(), 0.0);
                for (size_t i = 0; i < dk; ++i)
                    for (size_t j = 0; j < dv; ++j) acc[j] += double(w[t * dk + i]) * double(s[i * dv + j]);
                for (size_t j = 0; j < dv; ++j) u[t * dv + j] -= float(acc[j]);
            }

            // core_attn_out = inter_chunk_attn + intra_chunk_attn @ v_new, where
            // inter_chunk_attn = (query * cum_decay.exp()) @ last_recurrent_state and
            // intra_chunk_attn = (query @ key.transpose(-1, -2)) * pairwise_decay (diagonal included).
            for (size_t t = 0; t < len; ++t) {
                std::fill(acc.begin(), acc.end(), 0.0);
                const double q_decay = std::exp(c[t]);
                for (size_t i = 0; i < dk; ++i)
                    for (size_t j = 0; j < dv; ++j) acc[j] += q_decay * double(x[t].q[i]) * double(s[i * dv + j]);
                for (size_t p = 0; p <= t; ++p) {
                    double qk = 0.0;
                    for (size_t i = 0; i < dk; ++i) qk += double(x[t].q[i]) * double(x[p].k[i]);
                    const double attn = qk * std::exp(c[t] - c[p]);
                    for (size_t j = 0; j < dv; ++j) acc[j] += attn * double(u[p * dv + j]);
                }
                float* o = out + ((size_t(t0) + t) * hv + size_t(h)) * dv;
                for (size_t j = 0; j < dv; ++j) o[j] = float(acc[j]);
            }

            // last_recurrent_state = last_recurrent_state * chunk_decay + key.transpose(-1, -2) @ v_new,
            // with chunk_decay = exp(cum_decay[-1]) and key scaled by exp(cum_decay[-1] - cum_decay).
            const double chunk_decay = std::exp(c_last);
            for (size_t i = 0; i < dk; ++i) {
                std::fill(acc.begin(), acc.end(), 0.0);
                for (size_t t = 0; t < len; ++t) {
                    const double k_decayed = double(x[t].k[i]) * std::exp(c_last - c[t]);
                    for (size_t j = 0; j < dv; ++j) acc[j] += k_decayed * double(u[t * dv + j]);
                }
                for (size_t j = 0; j < dv; ++j) s[i * dv + j] = float(chunk_decay * double(s[i * dv + j]) + acc[j]);
            }
        }
    });
}

void gated_rmsnorm(const float* x, const float* z, const float* w, float eps, float* y, int n) {
    // Qwen3_5RMSNormGated: variance = hidden_states.pow(2).mean(-1, keepdim=True)
    double ss = 0.0;
    for (int i = 0; i < n; ++i) ss += double(x[i]) * double(x[i]);
    // hidden_states * torch.rsqrt(variance + eps), then self.weight * hidden_states, then
    // hidden_states * silu(gate): norm before gate.
    const float inv = float(1.0 / std::sqrt(ss / double(n) + double(eps)));
    for (int i = 0; i < n; ++i) y[i] = x[i] * inv * w[i] * silu(z[i]);
}

}  // namespace tt::cpu
