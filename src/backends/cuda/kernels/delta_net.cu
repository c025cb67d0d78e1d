// Gated DeltaNet kernels (Qwen3.5's linear-attention layers; cpu/delta_net.h defines each step and
// is the reference they are checked against).
//
// Decode is one launch per layer. The state S [Hv, dk, dv] is the only large operand (1 MiB a
// layer for Qwen3.5-0.8B), and its dv columns evolve independently given q, k, v, g and beta:
// S[:, j] <- e^g S[:, j] + k ((v_j - e^g S[:, j].k) beta), o_j = S[:, j].q. So a block takes one
// value head and 32 of its columns, each thread holds its part of those columns in registers
// (loaded before pdl_wait: no kernel of the step writes S before this one), and S is read and
// written exactly once. Every block of a value head needs the whole q/k head (for its l2norm) but
// only its slice of v; the per-head norm of o needs every slice, so the last block of a head to
// arrive normalises it (decode attention's pattern), and the last block of a q/k head shifts that
// head's conv state once all its readers are done.
//
// Prefill is four launches: (1) the causal conv with SiLU, the q/k l2norm and the gates for all n
// tokens; (2) per (64-token chunk, value head), everything that does not depend on the state: the
// cumulative decay, the intra-chunk attention, and the UT transform (a unit lower triangular
// solve) applied to beta v and beta e^cum k; (3) per (value head, column slice) the scan over the
// chunks that reads and updates the state; (4) the gated RMSNorm. (2) is parallel over all
// chunks, so only (3) is sequential in n, over dk x dv/slice per block: it was 60% of a 2048-token
// prefill of Qwen3.5-0.8B as f32 FMA with its loads exposed, so for bf16/f16 archives it runs on
// the tensor cores (TF32 operands, f32 state and accumulators) with the next chunk's operands
// loading behind the current one's products. f32 archives keep the f32 FMA scan: the reference
// the recurrence is checked against, and the state carried over thousands of tokens is where
// operand rounding would accumulate.
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/launch.cuh"
#include "backends/cuda/kernels/ptx.cuh"

#include "core/error.h"

namespace tt::cuda {

namespace {

constexpr float k_l2norm_eps = 1e-6f;  // transformers' l2norm(x, eps=1e-6)
constexpr int k_max_dk = 256;

struct Dims {
    int Hk, Hv, dk, dv, K, group, key_dim, conv_dim;
};
__host__ __device__ inline Dims dims_of(const DeltaNetArgs& a) {
    Dims d;
    d.Hk = a.n_k_heads;
    d.Hv = a.n_v_heads;
    d.dk = a.k_head_dim;
    d.dv = a.v_head_dim;
    d.K = a.conv_kernel;
    d.group = d.Hv / d.Hk;
    d.key_dim = d.Hk * d.dk;
    d.conv_dim = 2 * d.key_dim + d.Hv * d.dv;
    return d;
}

// torch's F.softplus (beta 1, threshold 20) and sigmoid, in full-precision expf: g enters the
// state as e^g per token, so its error compounds over the sequence.
__device__ __forceinline__ float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// g = -exp(A_log) * softplus(a + dt_bias), beta = sigmoid(b) of value head h.
template <typename W>
__device__ __forceinline__ void gates(float a, float b, const W* a_log, const W* dt_bias, int h, float& g, float& beta) {
    g = -expf(to_float(a_log[h])) * softplus(a + to_float(dt_bias[h]));
    beta = sigmoid(b);
}

// ---- decode ----

constexpr int k_dec_warps = 8;                       // each owns every 8th state row of the slice
constexpr int k_dec_cols = 32;                       // state columns per block, one per lane
constexpr int k_dec_rows = k_max_dk / k_dec_warps;   // state rows per thread at most

// Block (value head h, slice): columns j = slice * 32 + lane, rows i = warp + 8 r of S[h]; 256
// threads. Rows past dk (r beyond dk / 8) stay predicated off; their registers cost nothing but
// occupancy, which a grid of Hv * dv / 32 blocks does not need.
template <typename W, typename O>
__global__ void __launch_bounds__(k_dec_warps * 32) delta_net_decode_kernel(DeltaNetArgs a) {
    __shared__ float s_q[k_max_dk], s_k[k_max_dk], s_v[k_dec_cols];
    __shared__ float s_kv[k_dec_warps][k_dec_cols], s_o[k_dec_warps][k_dec_cols];
    __shared__ float s_gate[2], s_red[32];
    __shared__ bool s_last_qk, s_last_v;
    const Dims d = dims_of(a);
    const int h = blockIdx.x, slice = blockIdx.y, n_slices = gridDim.y, hk = h / d.group;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int col = slice * k_dec_cols + lane;
    const bool col_ok = col < d.dv;
    float* S = a.state + size_t(h) * d.dk * d.dv;

    // The state was last written by this layer's launch in the previous step, long finished: its
    // loads go out while the kernel before us (the projections) still runs under PDL.
    float s[k_dec_rows];
#pragma unroll
    for (int r = 0; r < k_dec_rows; ++r) {
        const int i = warp + r * k_dec_warps;
        s[r] = col_ok && i < d.dk ? S[size_t(i) * d.dv + col] : 0.0f;
    }
    pdl_wait();  // qkv, z, a, b are the projections' output
    pdl_launch_dependents();

    // causal_conv1d_update with SiLU for the channels the block needs: all 2 dk of its q/k head,
    // then its 32 of v. y = sum_j w[c, j] x'[j] over x' = (conv_state[c, 0..K-2], x[c]).
    const W* cw = static_cast<const W*>(a.conv_w);
    for (int c = threadIdx.x; c < 2 * d.dk + k_dec_cols; c += blockDim.x) {
        int ch;
        if (c < 2 * d.dk) {
            ch = c < d.dk ? hk * d.dk + c : d.key_dim + hk * d.dk + (c - d.dk);
        } else {
            const int j = slice * k_dec_cols + (c - 2 * d.dk);
            if (j >= d.dv) {
                s_v[c - 2 * d.dk] = 0.0f;
                continue;
            }
            ch = 2 * d.key_dim + h * d.dv + j;
        }
        float* cs = a.conv_state + size_t(ch) * (d.K - 1);
        const W* w = cw + size_t(ch) * d.K;
        const float x = a.qkv[ch];
        float acc = 0.0f;
        for (int j = 0; j < d.K - 1; ++j) acc += to_float(w[j]) * cs[j];
        acc += to_float(w[d.K - 1]) * x;
        const float y = silu(acc);
        if (c < d.dk) {
            s_q[c] = y;
        } else if (c < 2 * d.dk) {
            s_k[c - d.dk] = y;
        } else {
            s_v[c - 2 * d.dk] = y;
            // conv_state.copy_(...[-state_len:]): this block alone reads this v channel, and this
            // thread has read its old state just above.
            for (int j = 0; j < d.K - 2; ++j) cs[j] = cs[j + 1];
            cs[d.K - 2] = x;
        }
    }
    if (threadIdx.x == 0)
        gates(a.a[h], a.b[h], static_cast<const W*>(a.a_log), static_cast<const W*>(a.dt_bias), h, s_gate[0], s_gate[1]);
    __syncthreads();
    // l2norm of q (warp 0, then the dk^-0.5 scale) and k (warp 1).
    if (warp < 2) {
        float* x = warp == 0 ? s_q : s_k;
        float ss = 0.0f;
        for (int i = lane; i < d.dk; i += 32) ss += x[i] * x[i];
        float inv = rsqrtf(warp_sum(ss) + k_l2norm_eps);
        if (warp == 0) inv *= 1.0f / sqrtf(float(d.dk));
        for (int i = lane; i < d.dk; i += 32) x[i] *= inv;
    }
    __syncthreads();

    // S = S * exp(g); kv_mem = S^T k; delta = (v - kv_mem) * beta; S += k (x) delta; o = S^T q.
    // The column sums over rows cross the 8 warps through shared memory.
    const float decay = expf(s_gate[0]), beta = s_gate[1];
    float kv = 0.0f;
#pragma unroll
    for (int r = 0; r < k_dec_rows; ++r) {
        const int i = warp + r * k_dec_warps;
        if (i < d.dk) {
            s[r] *= decay;
            kv += s[r] * s_k[i];
        }
    }
    s_kv[warp][lane] = kv;
    __syncthreads();
    float kv_col = 0.0f;
#pragma unroll
    for (int w = 0; w < k_dec_warps; ++w) kv_col += s_kv[w][lane];
    const float delta = col_ok ? (s_v[lane] - kv_col) * beta : 0.0f;
    float o = 0.0f;
#pragma unroll
    for (int r = 0; r < k_dec_rows; ++r) {
        const int i = warp + r * k_dec_warps;
        if (i < d.dk) {
            s[r] += s_k[i] * delta;
            o += s[r] * s_q[i];
            if (col_ok) S[size_t(i) * d.dv + col] = s[r];
        }
    }
    s_o[warp][lane] = o;
    __syncthreads();
    if (warp == 0 && col_ok) {
        float oc = 0.0f;
#pragma unroll
        for (int w = 0; w < k_dec_warps; ++w) oc += s_o[w][lane];
        a.scratch[size_t(h) * d.dv + col] = oc;
    }

    // Arrivals (threadFenceReduction pattern: every writer fences before it counts itself).
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        s_last_qk = atomicAdd(&a.arrivals[hk], 1) == d.group * n_slices - 1;
        s_last_v = atomicAdd(&a.arrivals[d.Hk + h], 1) == n_slices - 1;
    }
    __syncthreads();
    if (s_last_qk) {
        // Every block of the q/k head has read the head's conv state: shift it once.
        if (threadIdx.x == 0) a.arrivals[hk] = 0;  // ready for the next launch (graph replay)
        for (int c = threadIdx.x; c < 2 * d.dk; c += blockDim.x) {
            const int ch = c < d.dk ? hk * d.dk + c : d.key_dim + hk * d.dk + (c - d.dk);
            float* cs = a.conv_state + size_t(ch) * (d.K - 1);
            for (int j = 0; j < d.K - 2; ++j) cs[j] = cs[j + 1];
            cs[d.K - 2] = a.qkv[ch];
        }
    }
    if (!s_last_v) return;  // uniform over the block
    // Qwen3_5RMSNormGated over the whole value head, o read back through L2 (other blocks wrote it).
    if (threadIdx.x == 0) a.arrivals[d.Hk + h] = 0;
    const float* oh = a.scratch + size_t(h) * d.dv;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < d.dv; i += blockDim.x) {
        const float v = __ldcg(oh + i);
        ss += v * v;
    }
    const float inv = rsqrtf(block_sum(ss, s_red) / float(d.dv) + a.norm_eps);
    const W* nw = static_cast<const W*>(a.norm_w);
    O* out = static_cast<O*>(a.out) + size_t(h) * d.dv;
    const float* z = a.z + size_t(h) * d.dv;
    for (int i = threadIdx.x; i < d.dv; i += blockDim.x)
        out[i] = from_float<O>(__ldcg(oh + i) * inv * to_float(nw[i]) * silu(z[i]));
}

// ---- prefill ----

constexpr int k_chunk = 64;  // transformers' chunk_size

// The prefill scratch (delta_net_prefill_scratch_floats), region by region. The v columns of xc
// are reused in place: v -> the UT transform's u = T (beta v) (chunk kernel) -> the output o
// before its norm (scan kernel); each step's block is the only one reading those elements.
struct PrefillScratch {
    float* xc;    // [n, conv_dim]: the conv output, q and k normalised
    float* g;     // [n, Hv]: g, then the cumulative g within each chunk
    float* beta;  // [n, Hv]
    float* w;     // [chunks, Hv, 64, dk]: T (beta e^cum k), transformers' k_cumdecay
    float* attn;  // [chunks, Hv, 64, 64]: (q k^T) * e^(cum_i - cum_j), j <= i
};

PrefillScratch prefill_scratch(const DeltaNetArgs& a) {
    const Dims d = dims_of(a);
    const size_t n = size_t(a.n), chunks = (n + k_chunk - 1) / k_chunk;
    PrefillScratch p;
    p.xc = a.scratch;
    p.g = p.xc + n * d.conv_dim;
    p.beta = p.g + n * d.Hv;
    p.w = p.beta + n * d.Hv;
    p.attn = p.w + chunks * d.Hv * k_chunk * d.dk;
    return p;
}

// (1) Causal conv + SiLU, l2norm, gates. Block (32-token tile, unit): a unit is one head's
// channels in qkv order (Hk q heads, Hk k heads, Hv v heads); 128 threads over its channels,
// each sliding a K-tap window down the tile. Only tile 0 reads the old conv state, and each of
// its channels is read by one thread, which also writes the new state (the last K-1 inputs).
constexpr int k_conv_tokens = 32;
constexpr int k_conv_threads = 128;

template <typename W, int K>
__global__ void __launch_bounds__(k_conv_threads) delta_net_conv_kernel(DeltaNetArgs a, PrefillScratch p) {
    extern __shared__ float tile[];  // [32][dk]: a q/k unit's outputs, for the l2norm
    const Dims d = dims_of(a);
    const int t0 = blockIdx.x * k_conv_tokens, unit = blockIdx.y, nt = min(k_conv_tokens, a.n - t0);
    const bool is_qk = unit < 2 * d.Hk;
    const int width = is_qk ? d.dk : d.dv;
    const int ch0 = is_qk ? unit * d.dk : 2 * d.key_dim + (unit - 2 * d.Hk) * d.dv;
    const float* __restrict__ x = a.qkv;
    float* __restrict__ xc = p.xc;
    pdl_wait();
    pdl_launch_dependents();
    for (int c = threadIdx.x; c < width; c += blockDim.x) {
        const int ch = ch0 + c;
        const W* wc = static_cast<const W*>(a.conv_w) + size_t(ch) * K;
        float w[K], win[K - 1], old[K - 1];
#pragma unroll
        for (int j = 0; j < K; ++j) w[j] = to_float(wc[j]);
        // win: the inputs at positions t0 - (K-1) .. t0 - 1; negative positions are the old state.
#pragma unroll
        for (int j = 0; j < K - 1; ++j) {
            const int pos = t0 - (K - 1) + j;
            win[j] = pos >= 0 ? x[size_t(pos) * d.conv_dim + ch] : a.conv_state[size_t(ch) * (K - 1) + (K - 1) + pos];
            old[j] = win[j];
        }
        for (int t = 0; t < nt; ++t) {
            const float xin = x[size_t(t0 + t) * d.conv_dim + ch];
            float acc = 0.0f;
#pragma unroll
            for (int j = 0; j < K - 1; ++j) acc += w[j] * win[j];
            acc += w[K - 1] * xin;
#pragma unroll
            for (int j = 0; j < K - 2; ++j) win[j] = win[j + 1];
            win[K - 2] = xin;
            const float y = silu(acc);
            if (is_qk) tile[t * width + c] = y;
            else xc[size_t(t0 + t) * d.conv_dim + ch] = y;
        }
        if (blockIdx.x == 0) {
            // conv_state.copy_(hidden_states_new[:, :, -state_len:]): positions n-K+1 .. n-1,
            // reaching back into the old state when n < K-1 (old holds it: tile 0 starts at 0).
#pragma unroll
            for (int j = 0; j < K - 1; ++j) {
                const int pos = a.n - (K - 1) + j;
                a.conv_state[size_t(ch) * (K - 1) + j] = pos >= 0 ? x[size_t(pos) * d.conv_dim + ch] : old[(K - 1) + pos];
            }
        }
    }
    if (is_qk) {  // uniform over the block
        __syncthreads();
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
        const float scale = unit < d.Hk ? 1.0f / sqrtf(float(d.dk)) : 1.0f;  // q: * dk^-0.5
        for (int t = warp; t < nt; t += n_warps) {
            float ss = 0.0f;
            for (int c = lane; c < width; c += 32) ss += tile[t * width + c] * tile[t * width + c];
            const float inv = rsqrtf(warp_sum(ss) + k_l2norm_eps) * scale;
            for (int c = lane; c < width; c += 32) xc[size_t(t0 + t) * d.conv_dim + ch0 + c] = tile[t * width + c] * inv;
        }
    } else if (threadIdx.x < nt) {
        const int h = unit - 2 * d.Hk;
        const size_t i = size_t(t0 + threadIdx.x) * d.Hv + h;
        gates(a.a[i], a.b[i], static_cast<const W*>(a.a_log), static_cast<const W*>(a.dt_bias), h, p.g[i], p.beta[i]);
    }
}

// (2) The state-independent part of chunk c for value head h (torch_chunk_gated_delta_rule's
// first phase), L = min(64, n - 64 c) tokens, rows past L zero (transformers' padding):
//   cum = cumsum(g);  attn[i][j] = (q_i . k_j) e^(cum_i - cum_j) for j <= i;
//   A[i][j] = beta_i (k_i . k_j) e^(cum_i - cum_j) for j < i;
//   u = (I + A)^-1 (beta v) -> in place of v;  w = (I + A)^-1 (beta e^cum k) -> p.w.
// 256 threads. The 64x64 products: each thread a 4x4 tile (rows ti + 16a, columns tj + 16b). The
// solve: forward substitution, one thread per right-hand-side column (dv of u, dk of w), each
// column independent, so no barrier between the 64 rows. Shared rows have odd strides so the 16
// rows a warp reads at once fall in distinct banks.
constexpr int k_prep_threads = 256;

__host__ __device__ inline int odd_stride(int w) { return w | 1; }
__host__ __device__ inline size_t prep_smem_floats(int dk, int dv) {
    return size_t(k_chunk) * (odd_stride(dk) + odd_stride(dk > dv ? dk : dv) + (k_chunk + 1)) + 3 * k_chunk;
}

__global__ void __launch_bounds__(k_prep_threads) delta_net_chunk_prep_kernel(DeltaNetArgs a, PrefillScratch p) {
    extern __shared__ float smem[];
    const Dims d = dims_of(a);
    const int c = blockIdx.x, h = blockIdx.y, hk = h / d.group, t0 = c * k_chunk, L = min(k_chunk, a.n - t0);
    const int ldk = odd_stride(d.dk), ldb = odd_stride(d.dk > d.dv ? d.dk : d.dv), lda = k_chunk + 1;
    float* sk = smem;                  // [64][ldk]: k, then beta e^cum k, then w
    float* sb = sk + k_chunk * ldk;    // [64][ldb]: q, then beta v, then u
    float* sa = sb + k_chunk * ldb;    // [64][65]: A
    float* s_cum = sa + k_chunk * lda; // [64]
    float* s_beta = s_cum + k_chunk;   // [64]
    float* s_bexp = s_beta + k_chunk;  // [64]: beta e^cum
    pdl_wait();
    pdl_launch_dependents();
    const int tid = threadIdx.x;
    if (tid < k_chunk) {
        s_cum[tid] = tid < L ? p.g[size_t(t0 + tid) * d.Hv + h] : 0.0f;
        s_beta[tid] = tid < L ? p.beta[size_t(t0 + tid) * d.Hv + h] : 0.0f;
    }
    for (int e = tid; e < k_chunk * d.dk; e += blockDim.x) {
        const int t = e / d.dk, i = e - t * d.dk;
        const float* row = p.xc + size_t(t0 + t) * d.conv_dim;
        sk[t * ldk + i] = t < L ? row[d.key_dim + hk * d.dk + i] : 0.0f;
        sb[t * ldb + i] = t < L ? row[hk * d.dk + i] : 0.0f;
    }
    __syncthreads();
    if (tid == 0) {
        // cum_decay = decay.cumsum(): summed in double (64 terms of up to tens each, whose
        // differences are exponentiated), stored back over g for the scan kernel. Padded rows
        // keep the last real value, as transformers' zero-padded g does.
        double cum = 0.0;
        for (int t = 0; t < k_chunk; ++t) {
            if (t < L) cum += double(s_cum[t]);
            s_cum[t] = float(cum);
            if (t < L) p.g[size_t(t0 + t) * d.Hv + h] = float(cum);
        }
    }
    __syncthreads();
    if (tid < k_chunk) s_bexp[tid] = s_beta[tid] * expf(s_cum[tid]);

    // q k^T and k k^T, 4x4 per thread; then attn to global and A to shared memory.
    {
        const int ti = tid / 16, tj = tid % 16;
        float qk[4][4] = {}, kk[4][4] = {};
        for (int i = 0; i < d.dk; ++i) {
            float qa[4], ka[4], kb[4];
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                qa[r] = sb[(ti + 16 * r) * ldb + i];
                ka[r] = sk[(ti + 16 * r) * ldk + i];
                kb[r] = sk[(tj + 16 * r) * ldk + i];
            }
#pragma unroll
            for (int r = 0; r < 4; ++r)
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    qk[r][q] += qa[r] * kb[q];
                    kk[r][q] += ka[r] * kb[q];
                }
        }
        float* attn = p.attn + (size_t(c) * d.Hv + h) * k_chunk * k_chunk;
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int i = ti + 16 * r, j = tj + 16 * q;
                // cum_i - cum_j <= 0 on and below the diagonal (g <= 0): no overflow.
                const float decay = j <= i ? expf(s_cum[i] - s_cum[j]) : 0.0f;
                attn[i * k_chunk + j] = qk[r][q] * decay;
                sa[i * lda + j] = j < i ? s_beta[i] * kk[r][q] * decay : 0.0f;
            }
    }
    __syncthreads();  // q and k are no longer read: their rows become the right-hand sides
    for (int e = tid; e < k_chunk * d.dv; e += blockDim.x) {
        const int t = e / d.dv, j = e - t * d.dv;
        sb[t * ldb + j] = t < L ? p.xc[size_t(t0 + t) * d.conv_dim + 2 * d.key_dim + h * d.dv + j] * s_beta[t] : 0.0f;
    }
    for (int e = tid; e < k_chunk * d.dk; e += blockDim.x) {
        const int t = e / d.dk, i = e - t * d.dk;
        sk[t * ldk + i] *= s_bexp[t];
    }
    __syncthreads();
    // solve_triangular(I + A, rhs, upper=False, unitriangular=True): x_t = rhs_t - sum_{j<t} A[t][j] x_j.
    for (int col = tid; col < d.dv + d.dk; col += blockDim.x) {
        float* x = col < d.dv ? sb + col : sk + (col - d.dv);
        const int ld = col < d.dv ? ldb : ldk;
        for (int t = 1; t < L; ++t) {
            float acc = x[t * ld];
            for (int j = 0; j < t; ++j) acc -= sa[t * lda + j] * x[j * ld];
            x[t * ld] = acc;
        }
    }
    __syncthreads();
    for (int e = tid; e < L * d.dv; e += blockDim.x) {
        const int t = e / d.dv, j = e - t * d.dv;
        p.xc[size_t(t0 + t) * d.conv_dim + 2 * d.key_dim + h * d.dv + j] = sb[t * ldb + j];
    }
    float* w = p.w + (size_t(c) * d.Hv + h) * k_chunk * d.dk;
    for (int e = tid; e < k_chunk * d.dk; e += blockDim.x) {
        const int t = e / d.dk, i = e - t * d.dk;
        w[e] = sk[t * ldk + i];  // rows past L are zero
    }
}

// (3) The scan over chunks for value head h and state columns [js, js + DVS) (the second phase):
// per chunk, with the state S of the chunk's start,
//   v_new = u - w S;  o = (e^cum q) S + attn v_new;  S = e^cum_L S + (e^(cum_L - cum) k)^T v_new.
// 256 threads, thread (row group rg = tid / DVS, column jc = tid % DVS). w and e^cum q are
// stacked as the 128 rows of one product with S (rows rg + k RG, RG = 256 / DVS: the thread's
// tokens are the same for both halves, so its v_new and o rows coincide); the state update gives
// each thread the state rows rg + k RG of its column. S lives in shared memory (the B operand of
// the first product, the accumulator of the last). Three barriers a chunk.
constexpr int k_scan_threads = 256;

__host__ __device__ inline int round4(int x) { return (x + 3) & ~3; }
__host__ __device__ inline size_t scan_smem_floats(int dk, int dvs) {
    const int ldw = round4(dk) + 4, lda = k_chunk + 4;
    return size_t(2 * k_chunk) * ldw + size_t(k_chunk) * dk + size_t(round4(dk)) * dvs + size_t(k_chunk) * dvs +
           size_t(k_chunk) * lda + 2 * k_chunk;
}

template <int DVS>
__global__ void __launch_bounds__(k_scan_threads) delta_net_scan_kernel(DeltaNetArgs a, PrefillScratch p) {
    constexpr int RG = k_scan_threads / DVS, NR = 2 * k_chunk / RG, NT = NR / 2;
    extern __shared__ float4 smem4[];  // float4: the stacked rows are read 16 bytes at a time
    const Dims d = dims_of(a);
    const int h = blockIdx.x, js = blockIdx.y * DVS, hk = h / d.group;
    const int tid = threadIdx.x, rg = tid / DVS, jc = tid % DVS, col = js + jc;
    const int dk4 = round4(d.dk), ldw = dk4 + 4, lda = k_chunk + 4;  // +4: rows rg, rg+1 in other banks
    float* swq = reinterpret_cast<float*>(smem4);  // [128][ldw]: w rows, then e^cum q rows
    float* sk = swq + 2 * k_chunk * ldw;           // [64][dk]: e^(cum_L - cum) k
    float* ss = sk + k_chunk * d.dk;               // [dk4][DVS]: the state slice
    float* sv = ss + dk4 * DVS;                    // [64][DVS]: u, then v_new
    float* sa = sv + k_chunk * DVS;                // [64][lda]: attn
    float* s_eq = sa + k_chunk * lda;              // [64]: e^cum
    float* s_ek = s_eq + k_chunk;                  // [64]: e^(cum_L - cum)
    float* S = a.state + size_t(h) * d.dk * d.dv;
    pdl_wait();
    pdl_launch_dependents();
    for (int e = tid; e < dk4 * DVS; e += blockDim.x) {
        const int i = e / DVS, j = e - i * DVS;
        ss[e] = i < d.dk && js + j < d.dv ? S[size_t(i) * d.dv + js + j] : 0.0f;
    }
    for (int e = tid; e < 2 * k_chunk * (ldw - d.dk); e += blockDim.x) {  // the padding columns stay zero
        const int r = e / (ldw - d.dk), i = d.dk + e % (ldw - d.dk);
        swq[r * ldw + i] = 0.0f;
    }
    const int n_chunks = (a.n + k_chunk - 1) / k_chunk;
    for (int c = 0; c < n_chunks; ++c) {
        const int t0 = c * k_chunk, L = min(k_chunk, a.n - t0);
        const float cum_last = p.g[size_t(t0 + L - 1) * d.Hv + h];
        __syncthreads();  // the previous chunk is done with every buffer
        if (tid < k_chunk) {
            const float cum = tid < L ? p.g[size_t(t0 + tid) * d.Hv + h] : cum_last;
            s_eq[tid] = expf(cum);
            s_ek[tid] = expf(cum_last - cum);
        }
        __syncthreads();
        const float* wc = p.w + (size_t(c) * d.Hv + h) * k_chunk * d.dk;
        for (int e = tid; e < k_chunk * d.dk; e += blockDim.x) {
            const int t = e / d.dk, i = e - t * d.dk;
            const float* row = p.xc + size_t(t0 + t) * d.conv_dim;
            swq[t * ldw + i] = wc[e];
            swq[(k_chunk + t) * ldw + i] = t < L ? row[hk * d.dk + i] * s_eq[t] : 0.0f;
            sk[e] = t < L ? row[d.key_dim + hk * d.dk + i] * s_ek[t] : 0.0f;
        }
        for (int e = tid; e < k_chunk * DVS; e += blockDim.x) {
            const int t = e / DVS, j = e - t * DVS;
            sv[e] = t < L && js + j < d.dv ? p.xc[size_t(t0 + t) * d.conv_dim + 2 * d.key_dim + h * d.dv + js + j] : 0.0f;
        }
        const float* ac = p.attn + (size_t(c) * d.Hv + h) * k_chunk * k_chunk;
        for (int e = tid; e < k_chunk * k_chunk; e += blockDim.x) sa[(e / k_chunk) * lda + e % k_chunk] = ac[e];
        __syncthreads();

        // [w; e^cum q] S for the thread's rows and column.
        float acc[NR];
#pragma unroll
        for (int k = 0; k < NR; ++k) acc[k] = 0.0f;
        for (int i = 0; i < dk4; i += 4) {
            const float s0 = ss[(i + 0) * DVS + jc], s1 = ss[(i + 1) * DVS + jc];
            const float s2 = ss[(i + 2) * DVS + jc], s3 = ss[(i + 3) * DVS + jc];
#pragma unroll
            for (int k = 0; k < NR; ++k) {
                const float4 wq = *reinterpret_cast<const float4*>(&swq[(rg + k * RG) * ldw + i]);
                acc[k] += wq.x * s0 + wq.y * s1 + wq.z * s2 + wq.w * s3;
            }
        }
        // v_new = new_values - k_cumdecay @ last_recurrent_state (in place of u: this thread's own elements).
#pragma unroll
        for (int k = 0; k < NT; ++k) sv[(rg + k * RG) * DVS + jc] -= acc[k];
        __syncthreads();
        // core_attn_out = inter_chunk_attn + intra_chunk_attn @ v_new, written over u in xc. One
        // v_new load serves the thread's NT rows; attn is zero above the diagonal (chunk kernel).
        {
            const int s_end = min(L, rg + (NT - 1) * RG + 1);
            for (int s = 0; s < s_end; ++s) {
                const float v = sv[s * DVS + jc];
#pragma unroll
                for (int k = 0; k < NT; ++k) acc[NT + k] += sa[(rg + k * RG) * lda + s] * v;
            }
#pragma unroll
            for (int k = 0; k < NT; ++k) {
                const int t = rg + k * RG;
                if (t < L && col < d.dv) p.xc[size_t(t0 + t) * d.conv_dim + 2 * d.key_dim + h * d.dv + col] = acc[NT + k];
            }
        }
        // last_recurrent_state * chunk_decay + key^T @ v_new, four state rows at a time sharing
        // each v_new load. S was last read before the barrier above.
        const float e_last = expf(cum_last);
        for (int i0 = rg; i0 < d.dk; i0 += 4 * RG) {
            float upd[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            for (int t = 0; t < L; ++t) {
                const float v = sv[t * DVS + jc];
                const float* kt = sk + t * d.dk;
#pragma unroll
                for (int r = 0; r < 4; ++r)
                    if (i0 + r * RG < d.dk) upd[r] += kt[i0 + r * RG] * v;
            }
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const int i = i0 + r * RG;
                if (i < d.dk) ss[i * DVS + jc] = e_last * ss[i * DVS + jc] + upd[r];
            }
        }
    }
    __syncthreads();
    for (int e = tid; e < d.dk * DVS; e += blockDim.x) {
        const int i = e / DVS, j = e - i * DVS;
        if (js + j < d.dv) S[size_t(i) * d.dv + js + j] = ss[e];
    }
}

// (3, tensor cores) The same scan for bf16/f16 archives, its four products per chunk on the tensor
// cores (mma m16n8k8, TF32 operands: the 10-bit mantissa of the bf16/f16 weights' own
// arithmetic, f32 accumulation; the state itself stays f32 in shared memory between chunks).
// Block (value head h, 16 state columns js..js+15), 8 warps. Per chunk, in the order of the
// FMA scan above but with the decays moved off the operands (so these load unscaled by cp.async):
//   1. [w; q] S: warp i < 4 the w rows 16i.., warp i >= 4 the q rows 16(i-4)..; both 16 columns;
//      warps < 4 write v_new = u - w S.
//   2. warps >= 4: o = e^cum (q S) + attn v_new (attn is lower triangular: its upper tiles skipped).
//   3. every warp, state rows 16i..: S = e^cum_L S + k^T (e^(cum_L - cum) v_new).
// The next chunk's w, k, u and decays load into the other buffer while this chunk computes; q and
// attn are single-buffered and reload once their last reader is past (q after step 1's barrier,
// attn after a barrier among the warps that read it). Shared strides are chosen so a fragment's
// 32 reads fall in 32 distinct banks (A row-major: stride = 4 mod 32 words; A read transposed
// from k: stride = 8 mod 32; B: 24).
constexpr int k_tc_cols = 16;
constexpr int k_tc_threads = 256;
constexpr int k_tc_max_dk = 128;  // two buffers of w and k, one of q and attn: ~215 KiB at dk 128

struct TcScanLayout {
    int ldw, ldk, ldv, lda;          // strides of w and q, k, u / v_new / S, attn
    int w, k, u, dec, stage;         // float offsets in buffer 0; buffer b adds b * stage
    int q, attn, s, vn, floats;      // float offsets of the single regions, and the total
};
__host__ __device__ inline TcScanLayout tc_scan_layout(int dk) {
    TcScanLayout l;
    l.ldw = dk + 4;
    l.ldk = dk + 8;
    l.ldv = k_tc_cols + 8;
    l.lda = k_chunk + 4;
    l.w = 0;
    l.k = l.w + k_chunk * l.ldw;
    l.u = l.k + k_chunk * l.ldk;
    l.dec = l.u + k_chunk * l.ldv;
    l.stage = l.dec + 2 * k_chunk + 4;  // e^cum [64], e^(cum_L - cum) [64], e^cum_L
    l.q = 2 * l.stage;
    l.attn = l.q + k_chunk * l.ldw;
    l.s = l.attn + k_chunk * l.lda;
    l.vn = l.s + dk * l.ldv;
    l.floats = l.vn + k_chunk * l.ldv;
    return l;
}

// Whether the tensor-core scan takes these dims: 16-row tiles of dk and 16-column slices of dv,
// every row start of xc, w and attn 16-byte aligned (cp.async), and the buffers within the
// device's shared memory.
bool tc_scan_fits(const Dims& d, const PrefillScratch& p, size_t smem_optin) {
    const auto aligned = [](const void* x) { return reinterpret_cast<uintptr_t>(x) % 16 == 0; };
    return d.dk % 16 == 0 && d.dk <= k_tc_max_dk && d.dv % k_tc_cols == 0 && d.conv_dim % 4 == 0 && aligned(p.xc) &&
           aligned(p.w) && aligned(p.attn) && size_t(tc_scan_layout(d.dk).floats) * sizeof(float) <= smem_optin;
}

__global__ void __launch_bounds__(k_tc_threads) delta_net_scan_tc_kernel(DeltaNetArgs a, PrefillScratch p) {
    extern __shared__ float4 smem4[];
    float* sm = reinterpret_cast<float*>(smem4);
    const Dims d = dims_of(a);
    const TcScanLayout l = tc_scan_layout(d.dk);
    const int h = blockIdx.x, js = blockIdx.y * k_tc_cols, hk = h / d.group;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int n_chunks = (a.n + k_chunk - 1) / k_chunk, dk4 = d.dk / 4;
    const size_t q_off = size_t(hk) * d.dk, k_off = size_t(d.key_dim) + q_off, v_off = 2 * size_t(d.key_dim) + size_t(h) * d.dv + js;
    // Locals, not the kernel parameters: the lambdas below would take the parameters' addresses.
    const int n = a.n;
    float* const xc = p.xc;
    const float* const pw = p.w;
    const float* const pg = p.g;
    const float* const pattn = p.attn;
    float* S = a.state + size_t(h) * d.dk * d.dv;
    float* ss = sm + l.s;
    float* vn = sm + l.vn;

    // Row t of chunk c in xc, or null past the sequence (cp_async16 then zero-fills).
    const auto xc_row = [&](int c, int t) -> const float* {
        const int pos = c * k_chunk + t;
        return pos < n ? xc + size_t(pos) * d.conv_dim : nullptr;
    };
    const auto load_rows = [&](float* dst, int ld, int c, size_t off, int quads, int first, int stride) {
        for (int e = first; e < k_chunk * quads; e += stride) {
            const int t = e / quads, i = 4 * (e - t * quads);
            const float* row = xc_row(c, t);
            cp_async16(smem_addr(dst + t * ld + i), row ? row + off + i : xc, row != nullptr);
        }
    };
    // The chunk's w, k, u by cp.async, and its decays by plain loads (visible after the next barrier).
    const auto load_stage = [&](int c, int b) {
        const float* wc = pw + (size_t(c) * d.Hv + h) * k_chunk * d.dk;
        for (int e = tid; e < k_chunk * dk4; e += k_tc_threads) {
            const int t = e / dk4, i = 4 * (e - t * dk4);
            cp_async16(smem_addr(sm + l.w + b * l.stage + t * l.ldw + i), wc + t * d.dk + i, true);  // rows past L are zero
        }
        load_rows(sm + l.k + b * l.stage, l.ldk, c, k_off, dk4, tid, k_tc_threads);
        load_rows(sm + l.u + b * l.stage, l.ldv, c, v_off, k_tc_cols / 4, tid, k_tc_threads);
        if (tid < k_chunk) {
            const int t0 = c * k_chunk, L = min(k_chunk, n - t0);
            const float cum_last = pg[size_t(t0 + L - 1) * d.Hv + h];
            const float cum = tid < L ? pg[size_t(t0 + tid) * d.Hv + h] : cum_last;  // padded rows: no decay
            float* dec = sm + l.dec + b * l.stage;
            dec[tid] = expf(cum);
            dec[k_chunk + tid] = expf(cum_last - cum);
            if (tid == 0) dec[2 * k_chunk] = expf(cum_last);
        }
    };
    const auto load_q = [&](int c) { load_rows(sm + l.q, l.ldw, c, q_off, dk4, tid, k_tc_threads); };
    const auto load_attn = [&](int c, int first, int stride) {  // rows are whole (64 x 64 per chunk)
        const float* ac = pattn + (size_t(c) * d.Hv + h) * k_chunk * k_chunk;
        for (int e = first; e < k_chunk * k_chunk / 4; e += stride) {
            const int t = e / (k_chunk / 4), i = 4 * (e - t * (k_chunk / 4));
            cp_async16(smem_addr(sm + l.attn + t * l.lda + i), ac + t * k_chunk + i, true);
        }
    };

    pdl_wait();
    pdl_launch_dependents();
    load_stage(0, 0);
    load_q(0);
    load_attn(0, tid, k_tc_threads);
    cp_async_commit();
    for (int e = tid; e < d.dk * k_tc_cols; e += k_tc_threads) {
        const int i = e / k_tc_cols, j = e - i * k_tc_cols;
        ss[i * l.ldv + j] = S[size_t(i) * d.dv + js + j];
    }
    for (int c = 0; c < n_chunks; ++c) {
        const int b = c & 1, t0 = c * k_chunk, L = min(k_chunk, n - t0);
        cp_async_wait_all();
        __syncthreads();  // chunk c is in shared memory; the previous chunk is done with every buffer
        if (c + 1 < n_chunks) load_stage(c + 1, b ^ 1);
        cp_async_commit();
        const float* sw = sm + l.w + b * l.stage;
        const float* sk = sm + l.k + b * l.stage;
        const float* su = sm + l.u + b * l.stage;
        const float* dec = sm + l.dec + b * l.stage;

        // 1. [w; q] S over dk, 8 k-steps per 64 of dk.
        float acc[2][4] = {};
        {
            const float* A = warp < 4 ? sw + 16 * warp * l.ldw : sm + l.q + 16 * (warp - 4) * l.ldw;
            for (int k0 = 0; k0 < d.dk; k0 += 8) {
                const uint32_t af[4] = {to_tf32(A[g * l.ldw + k0 + t4]), to_tf32(A[(g + 8) * l.ldw + k0 + t4]),
                                        to_tf32(A[g * l.ldw + k0 + t4 + 4]), to_tf32(A[(g + 8) * l.ldw + k0 + t4 + 4])};
#pragma unroll
                for (int nt = 0; nt < 2; ++nt)
                    mma1688_tf32(acc[nt], af, to_tf32(ss[(k0 + t4) * l.ldv + 8 * nt + g]),
                                 to_tf32(ss[(k0 + t4 + 4) * l.ldv + 8 * nt + g]));
            }
        }
        if (warp < 4) {  // v_new = u - w S
#pragma unroll
            for (int nt = 0; nt < 2; ++nt)
#pragma unroll
                for (int r = 0; r < 4; ++r) {
                    const int row = 16 * warp + g + 8 * (r >> 1), col = 8 * nt + 2 * t4 + (r & 1);
                    vn[row * l.ldv + col] = su[row * l.ldv + col] - acc[nt][r];
                }
        }
        __syncthreads();  // v_new is complete; q and S are no longer read
        if (c + 1 < n_chunks) load_q(c + 1);
        cp_async_commit();

        // 2. o = e^cum (q S) + attn v_new for the q rows of warps 4..7, over the keys up to the diagonal.
        if (warp >= 4) {
            const int r0 = 16 * (warp - 4);
            const float* A = sm + l.attn + r0 * l.lda;
            float o[2][4] = {};
            for (int k0 = 0; k0 < r0 + 16; k0 += 8) {
                const uint32_t af[4] = {to_tf32(A[g * l.lda + k0 + t4]), to_tf32(A[(g + 8) * l.lda + k0 + t4]),
                                        to_tf32(A[g * l.lda + k0 + t4 + 4]), to_tf32(A[(g + 8) * l.lda + k0 + t4 + 4])};
#pragma unroll
                for (int nt = 0; nt < 2; ++nt)
                    mma1688_tf32(o[nt], af, to_tf32(vn[(k0 + t4) * l.ldv + 8 * nt + g]),
                                 to_tf32(vn[(k0 + t4 + 4) * l.ldv + 8 * nt + g]));
            }
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const int row = r0 + g + 8 * half;
                if (row >= L) continue;
                float* dst = xc + size_t(t0 + row) * d.conv_dim + v_off;
#pragma unroll
                for (int nt = 0; nt < 2; ++nt) {
                    const int col = 8 * nt + 2 * t4;
                    *reinterpret_cast<float2*>(dst + col) =
                        make_float2(dec[row] * acc[nt][2 * half] + o[nt][2 * half], dec[row] * acc[nt][2 * half + 1] + o[nt][2 * half + 1]);
                }
            }
            // attn's last readers are these four warps: past this barrier they reload it.
            asm volatile("bar.sync 1, 128;\n" ::: "memory");
            if (c + 1 < n_chunks) load_attn(c + 1, tid - 128, 128);
            cp_async_commit();
        }

        // 3. S = e^cum_L S + k^T (e^(cum_L - cum) v_new); A = k^T read from k's rows.
        const float* ek = dec + k_chunk;
        const float e_last = dec[2 * k_chunk];
        const int k_end = (L + 7) & ~7;  // v_new rows past L are zero
        for (int mt = warp; mt < d.dk / 16; mt += 8) {
            const int i0 = 16 * mt;
            float st[2][4];
#pragma unroll
            for (int nt = 0; nt < 2; ++nt)
#pragma unroll
                for (int r = 0; r < 4; ++r)
                    st[nt][r] = e_last * ss[(i0 + g + 8 * (r >> 1)) * l.ldv + 8 * nt + 2 * t4 + (r & 1)];
            for (int k0 = 0; k0 < k_end; k0 += 8) {
                const uint32_t af[4] = {to_tf32(sk[(k0 + t4) * l.ldk + i0 + g]), to_tf32(sk[(k0 + t4) * l.ldk + i0 + g + 8]),
                                        to_tf32(sk[(k0 + t4 + 4) * l.ldk + i0 + g]), to_tf32(sk[(k0 + t4 + 4) * l.ldk + i0 + g + 8])};
                const float e0 = ek[k0 + t4], e1 = ek[k0 + t4 + 4];
#pragma unroll
                for (int nt = 0; nt < 2; ++nt)
                    mma1688_tf32(st[nt], af, to_tf32(e0 * vn[(k0 + t4) * l.ldv + 8 * nt + g]),
                                 to_tf32(e1 * vn[(k0 + t4 + 4) * l.ldv + 8 * nt + g]));
            }
#pragma unroll
            for (int nt = 0; nt < 2; ++nt)
#pragma unroll
                for (int r = 0; r < 4; ++r)
                    ss[(i0 + g + 8 * (r >> 1)) * l.ldv + 8 * nt + 2 * t4 + (r & 1)] = st[nt][r];
        }
    }
    cp_async_wait_all();
    __syncthreads();
    for (int e = tid; e < d.dk * k_tc_cols; e += k_tc_threads) {
        const int i = e / k_tc_cols, j = e - i * k_tc_cols;
        S[size_t(i) * d.dv + js + j] = ss[i * l.ldv + j];
    }
}

// (4) Qwen3_5RMSNormGated per (token, value head) row of o (in xc's v columns): one warp a row.
constexpr int k_norm_warps = 8;

template <typename W, typename O>
__global__ void __launch_bounds__(k_norm_warps * 32) delta_net_norm_kernel(DeltaNetArgs a, PrefillScratch p) {
    const Dims d = dims_of(a);
    const int lane = threadIdx.x & 31, row = blockIdx.x * k_norm_warps + int(threadIdx.x >> 5);
    pdl_wait();
    pdl_launch_dependents();
    if (row >= a.n * d.Hv) return;  // the whole warp
    const int t = row / d.Hv, h = row - t * d.Hv;
    const float* o = p.xc + size_t(t) * d.conv_dim + 2 * d.key_dim + size_t(h) * d.dv;
    float ss = 0.0f;
    for (int i = lane; i < d.dv; i += 32) ss += o[i] * o[i];
    const float inv = rsqrtf(warp_sum(ss) / float(d.dv) + a.norm_eps);
    const W* nw = static_cast<const W*>(a.norm_w);
    const float* z = a.z + size_t(row) * d.dv;
    O* out = static_cast<O*>(a.out) + size_t(row) * d.dv;
    for (int i = lane; i < d.dv; i += 32) out[i] = from_float<O>(o[i] * inv * to_float(nw[i]) * silu(z[i]));
}

void check_args(const DeltaNetArgs& a, const char* what) {
    if (a.n_k_heads <= 0 || a.n_v_heads <= 0 || a.n_v_heads % a.n_k_heads != 0)
        fail("{}: value heads {} are not a multiple of key heads {}", what, a.n_v_heads, a.n_k_heads);
    if (a.k_head_dim <= 0 || a.k_head_dim > k_max_dk || a.v_head_dim <= 0)
        fail("{}: head dims dk {} dv {} unsupported (dk at most {})", what, a.k_head_dim, a.v_head_dim, k_max_dk);
    if (a.conv_kernel < 2 || a.conv_kernel > 4) fail("{}: conv kernel {} unsupported (2 to 4)", what, a.conv_kernel);
}

// Opts the kernel into `smem` bytes of dynamic shared memory, failing when the device has fewer.
template <typename Kernel>
void set_smem(Kernel k, size_t smem, const char* what) {
    int dev = 0, optin = 0;
    TT_CUDA_CHECK(cudaGetDevice(&dev));
    TT_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (smem > size_t(optin))
        fail("delta_net_prefill: {} needs {} bytes of shared memory, the device allows {}", what, smem, optin);
    allow_dynamic_smem(k, smem);
}

}  // namespace

void delta_net_decode(const DeltaNetArgs& a, cudaStream_t s) {
    check_args(a, "delta_net_decode");
    if (a.n != 1) fail("delta_net_decode: {} tokens, decode takes one", a.n);
    const dim3 grid(unsigned(a.n_v_heads), unsigned((a.v_head_dim + k_dec_cols - 1) / k_dec_cols));
    TT_DISPATCH_FLOAT(a.wdt, W, TT_DISPATCH_FLOAT(a.out_dt, O, {
        launch(delta_net_decode_kernel<W, O>, grid, k_dec_warps * 32, 0, s, a);
    }));
    TT_CUDA_LAUNCH_CHECK();
}

void delta_net_prefill(const DeltaNetArgs& a, cudaStream_t s) {
    check_args(a, "delta_net_prefill");
    if (a.n <= 0) return;
    const Dims d = dims_of(a);
    const PrefillScratch p = prefill_scratch(a);
    const int n_chunks = (a.n + k_chunk - 1) / k_chunk;

    // (1) conv, norms, gates
    const dim3 conv_grid(unsigned((a.n + k_conv_tokens - 1) / k_conv_tokens), unsigned(2 * d.Hk + d.Hv));
    const size_t conv_smem = size_t(k_conv_tokens) * d.dk * sizeof(float);
    TT_DISPATCH_FLOAT(a.wdt, W, {
        auto k = d.K == 2 ? delta_net_conv_kernel<W, 2> : d.K == 3 ? delta_net_conv_kernel<W, 3> : delta_net_conv_kernel<W, 4>;
        launch(k, conv_grid, k_conv_threads, conv_smem, s, a, p);
    });
    TT_CUDA_LAUNCH_CHECK();

    // (2) per chunk and value head: cumulative decay, attention, UT transform
    const size_t prep_smem = prep_smem_floats(d.dk, d.dv) * sizeof(float);
    set_smem(delta_net_chunk_prep_kernel, prep_smem, "the chunk kernel");
    launch(delta_net_chunk_prep_kernel, dim3(unsigned(n_chunks), unsigned(d.Hv)), k_prep_threads, prep_smem, s, a, p);
    TT_CUDA_LAUNCH_CHECK();

    // (3) the scan. bf16/f16 archives: on the tensor cores when the dims allow (tc_scan_fits); f32
    // archives keep f32 FMA, the reference the others are checked against.
    int dev = 0, n_sms = 0, optin = 0;
    TT_CUDA_CHECK(cudaGetDevice(&dev));
    TT_CUDA_CHECK(cudaDeviceGetAttribute(&n_sms, cudaDevAttrMultiProcessorCount, dev));
    TT_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (a.wdt != DType::f32 && tc_scan_fits(d, p, size_t(optin))) {
        const size_t smem = size_t(tc_scan_layout(d.dk).floats) * sizeof(float);
        set_smem(delta_net_scan_tc_kernel, smem, "the tensor-core scan kernel");
        launch(delta_net_scan_tc_kernel, dim3(unsigned(d.Hv), unsigned(d.dv / k_tc_cols)), k_tc_threads, smem, s, a, p);
    } else {
        // 16 state columns a block when that still fits the grid in one wave over the SMs (twice
        // the blocks of 32), else 32 (half the reloads of w, q and k per column).
        const bool narrow = d.Hv * ((d.dv + 15) / 16) <= n_sms;
        const int dvs = narrow ? 16 : 32;
        const size_t scan_smem = scan_smem_floats(d.dk, dvs) * sizeof(float);
        auto scan = narrow ? delta_net_scan_kernel<16> : delta_net_scan_kernel<32>;
        set_smem(scan, scan_smem, "the scan kernel");
        launch(scan, dim3(unsigned(d.Hv), unsigned((d.dv + dvs - 1) / dvs)), k_scan_threads, scan_smem, s, a, p);
    }
    TT_CUDA_LAUNCH_CHECK();

    // (4) the gated RMSNorm
    const unsigned rows = unsigned((size_t(a.n) * d.Hv + k_norm_warps - 1) / k_norm_warps);
    TT_DISPATCH_FLOAT(a.wdt, W, TT_DISPATCH_FLOAT(a.out_dt, O, {
        launch(delta_net_norm_kernel<W, O>, rows, k_norm_warps * 32, 0, s, a, p);
    }));
    TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::cuda
