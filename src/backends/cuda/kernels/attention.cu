// Attention kernels. Decode: flash-decoding — the visible keys are split evenly over n_splits
// blocks per KV head, each block scores its keys for all query heads of the GQA group (K and V rows
// read once), keeps an unnormalized partial output with its running max and sum, and a second
// kernel merges the splits. The split size is computed on the device from the current length, so
// one graph-captured launch serves every position. Prefill: the masked softmax between the two
// cuBLAS products (scores = Q K^T, out = P V).
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/kernels.h"

namespace tt::cuda {

namespace {

constexpr int k_attn_threads = 128;
constexpr int k_max_group = 16;
// Keys per split at least: short contexts use few splits (the merge then reads few partials).
constexpr int k_min_chunk = 16;

__device__ __forceinline__ int split_chunk(int n_keys, int n_splits) {
    return max(k_min_chunk, (n_keys + n_splits - 1) / n_splits);
}

template <typename KV>
__global__ void __launch_bounds__(k_attn_threads) decode_attn_split_kernel(DecodeAttnArgs a, int max_chunk) {
    extern __shared__ float smem[];
    const int kvh = blockIdx.x, split = blockIdx.y;
    const int hd = a.head_dim, group = a.n_heads / a.n_kv_heads, kv_dim = a.n_kv_heads * hd;
    const int len = *a.d_pos + 1;
    const int first = a.window > 0 ? max(0, len - a.window) : 0;
    const int chunk = split_chunk(len - first, a.n_splits);
    const int start = first + split * chunk, end = min(start + chunk, len);
    float* part = a.partial + (size_t(kvh) * a.n_splits + split) * group * (hd + 2);
    if (start >= end) {
        for (int g = threadIdx.x; g < group; g += blockDim.x) {
            part[g * (hd + 2) + hd] = -INFINITY;
            part[g * (hd + 2) + hd + 1] = 0.0f;
        }
        return;
    }
    float* s_q = smem;                  // [group][hd]
    float* s_p = smem + group * hd;     // [group][max_chunk]
    for (int i = threadIdx.x; i < group * hd; i += blockDim.x) s_q[i] = a.q[size_t(kvh * group) * hd + i];
    __syncthreads();
    const KV* kc = static_cast<const KV*>(a.k_cache);
    const KV* vc = static_cast<const KV*>(a.v_cache);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    // Scores: one warp per key row, lanes across head_dim.
    for (int j = start + warp; j < end; j += n_warps) {
        const KV* krow = kc + size_t(j) * kv_dim + size_t(kvh) * hd;
        float kv_reg[8];  // head_dim <= 256
        int nk = 0;
        for (int d = lane; d < hd; d += 32) kv_reg[nk++] = to_float(krow[d]);
        for (int g = 0; g < group; ++g) {
            float dot = 0;
            int i = 0;
            for (int d = lane; d < hd; d += 32) dot += s_q[g * hd + d] * kv_reg[i++];
            dot = warp_sum(dot) * a.scale;
            if (a.softcap > 0) dot = a.softcap * tanhf(dot / a.softcap);
            if (lane == 0) s_p[g * max_chunk + (j - start)] = dot;
        }
    }
    __syncthreads();
    // Softmax statistics per query head of the group: one warp per head.
    __shared__ float s_m[k_max_group], s_l[k_max_group];
    const int n = end - start;
    for (int g = warp; g < group; g += n_warps) {
        float m = -INFINITY;
        for (int j = lane; j < n; j += 32) m = fmaxf(m, s_p[g * max_chunk + j]);
        m = warp_max(m);
        float l = 0;
        for (int j = lane; j < n; j += 32) {
            const float p = __expf(s_p[g * max_chunk + j] - m);
            s_p[g * max_chunk + j] = p;
            l += p;
        }
        l = warp_sum(l);
        if (lane == 0) {
            s_m[g] = m;
            s_l[g] = l;
        }
    }
    __syncthreads();
    // Unnormalized output: threads across (head, dim); V rows read coalesced.
    for (int i = threadIdx.x; i < group * hd; i += blockDim.x) {
        const int g = i / hd, d = i % hd;
        float acc = 0;
        const KV* vcol = vc + size_t(start) * kv_dim + size_t(kvh) * hd + d;
        for (int j = 0; j < n; ++j) acc += s_p[g * max_chunk + j] * to_float(vcol[size_t(j) * kv_dim]);
        part[g * (hd + 2) + d] = acc;
    }
    for (int g = threadIdx.x; g < group; g += blockDim.x) {
        part[g * (hd + 2) + hd] = s_m[g];
        part[g * (hd + 2) + hd + 1] = s_l[g];
    }
}

__global__ void decode_attn_merge_kernel(DecodeAttnArgs a) {
    __shared__ float s_w[256];  // weight of each split: exp(m_split - m) / l
    const int h = blockIdx.x, hd = a.head_dim, group = a.n_heads / a.n_kv_heads;
    const int kvh = h / group, g = h % group;
    const float* base = a.partial + size_t(kvh) * a.n_splits * group * (hd + 2) + size_t(g) * (hd + 2);
    const size_t stride = size_t(group) * (hd + 2);
    const int len = *a.d_pos + 1;
    const int first = a.window > 0 ? max(0, len - a.window) : 0;
    const int chunk = split_chunk(len - first, a.n_splits);
    const int n_active = min(a.n_splits, (len - first + chunk - 1) / chunk);  // splits that saw keys
    if (threadIdx.x < 32) {
        float m = -INFINITY;
        for (int sp = threadIdx.x; sp < n_active; sp += 32) m = fmaxf(m, base[sp * stride + hd]);
        m = warp_max(m);
        float l = 0;
        for (int sp = threadIdx.x; sp < n_active; sp += 32) {
            const float w = __expf(base[sp * stride + hd] - m);
            s_w[sp] = w;
            l += base[sp * stride + hd + 1] * w;
        }
        l = warp_sum(l);
        for (int sp = threadIdx.x; sp < n_active; sp += 32) s_w[sp] /= l;
    }
    __syncthreads();
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float acc = 0;
        for (int sp = 0; sp < n_active; ++sp) acc += base[sp * stride + d] * s_w[sp];
        a.out[size_t(h) * hd + d] = acc;
    }
}

template <typename O>
__global__ void masked_softmax_kernel(const float* scores, O* probs, int n_q, int n_k, int q_pos0, int window,
                                      float scale, float softcap) {
    __shared__ float scratch[32];
    const int i = blockIdx.x, h = blockIdx.y;
    const size_t row = (size_t(h) * n_q + i) * n_k;
    const int q_pos = q_pos0 + i;
    const int lo = window > 0 ? max(0, q_pos - window + 1) : 0, hi = min(q_pos, n_k - 1);  // visible [lo, hi]
    float m = -INFINITY;
    for (int j = lo + threadIdx.x; j <= hi; j += blockDim.x) {
        float s = scores[row + j] * scale;
        if (softcap > 0) s = softcap * tanhf(s / softcap);
        m = fmaxf(m, s);
    }
    m = block_max(m, scratch);
    float l = 0;
    for (int j = lo + threadIdx.x; j <= hi; j += blockDim.x) {
        float s = scores[row + j] * scale;
        if (softcap > 0) s = softcap * tanhf(s / softcap);
        l += __expf(s - m);
    }
    l = block_sum(l, scratch);
    const float inv = 1.0f / l;
    for (int j = threadIdx.x; j < n_k; j += blockDim.x) {
        float p = 0;
        if (j >= lo && j <= hi) {
            float s = scores[row + j] * scale;
            if (softcap > 0) s = softcap * tanhf(s / softcap);
            p = __expf(s - m) * inv;
        }
        probs[row + j] = from_float<O>(p);
    }
}

}  // namespace

int decode_attention_splits(int n_kv_heads, int n_sms) {
    // Enough blocks for two waves over the SMs at long contexts; short contexts just get small splits.
    return std::max(1, std::min(256, (2 * n_sms + n_kv_heads - 1) / n_kv_heads));
}

size_t decode_attention_partial_floats(int n_heads, int head_dim, int n_splits) {
    return size_t(n_heads) * n_splits * (head_dim + 2);
}

void decode_attention(const DecodeAttnArgs& a, cudaStream_t s) {
    const int group = a.n_heads / a.n_kv_heads;
    if (group > k_max_group || a.head_dim > 256) fail("decode attention: GQA group {} or head_dim {} too large", group, a.head_dim);
    const int max_chunk = std::max(k_min_chunk, (a.n_ctx + a.n_splits - 1) / a.n_splits);
    const size_t smem = (size_t(group) * a.head_dim + size_t(group) * max_chunk) * sizeof(float);
    TT_DISPATCH_FLOAT(a.kv_dt, KV, {
        auto k = decode_attn_split_kernel<KV>;
        if (smem > 48 * 1024) TT_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
        k<<<dim3(unsigned(a.n_kv_heads), unsigned(a.n_splits)), k_attn_threads, smem, s>>>(a, max_chunk);
    });
    TT_CUDA_LAUNCH_CHECK();
    decode_attn_merge_kernel<<<a.n_heads, 128, 0, s>>>(a);
    TT_CUDA_LAUNCH_CHECK();
}

void masked_softmax(const float* scores, void* probs, DType out_dt, int n_heads, int n_q, int n_k, int q_pos0,
                    int window, float scale, float softcap, cudaStream_t s) {
    TT_DISPATCH_FLOAT(out_dt, O,
        masked_softmax_kernel<O><<<dim3(unsigned(n_q), unsigned(n_heads)), 256, 0, s>>>(scores, static_cast<O*>(probs), n_q,
                                                                                     n_k, q_pos0, window, scale, softcap));
    TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::cuda
