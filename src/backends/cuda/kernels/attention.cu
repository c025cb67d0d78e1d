// Attention kernels. Decode: flash-decoding — the visible keys are split evenly over n_splits
// blocks per KV head, each block scores its keys for all query heads of the GQA group (K and V rows
// read once), keeps an unnormalized partial output with its running max and sum, and the last
// block to finish merges the splits. RoPE and the KV-cache write of the new token can ride in the
// same launch (one kernel per layer instead of three, which is what small models pay for). The
// split size is computed on the device from the current length, so one graph-captured launch
// serves every position. Prefill, for the models the flash kernel (flash_attention.cu) does not
// cover: the masked softmax between the two cuBLAS products (scores = Q K^T, out = P V).
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/launch.cuh"
#include "backends/cuda/kernels/rope.cuh"

namespace tt::cuda {

namespace {

constexpr int k_attn_threads = 256;
constexpr int k_max_group = 16;
// Keys per split at least: short contexts use few splits (the merge then reads few partials).
constexpr int k_min_chunk = 32;

__device__ __forceinline__ int split_chunk(int n_keys, int n_splits) {
    return max(k_min_chunk, (n_keys + n_splits - 1) / n_splits);
}

// One block per (KV head, split). ROPE: q and the newest k/v are the raw projections; the block
// prepares its group's q heads itself (bias, q/k norm, RoPE: the same rope.cuh as prefill), and the
// block whose split holds the newest position also writes that position's k and v into the cache.
// The last block of a KV head to finish merges the splits of its group (no second launch).
// NR: key floats per lane (head_dim <= 32 NR): 8 up to head_dim 256, 16 for Gemma 4's 512.
template <typename W, typename KV, bool ROPE, int NR>
__global__ void __launch_bounds__(k_attn_threads) decode_attn_kernel(DecodeAttnArgs a, int max_chunk) {
    extern __shared__ float smem[];
    const int kvh = blockIdx.x, split = blockIdx.y, row = blockIdx.z;
    const int hd = a.head_dim, group = a.n_heads / a.n_kv_heads, kv_dim = a.n_kv_heads * hd;
    // The position was copied up before the step's first kernel: it does not depend on the previous one.
    const int pos = a.d_pos[row], len = pos + 1;
    // A batched step's row: its own sequence's caches, inputs, output and scratch.
    const size_t cache_off = a.d_slot ? size_t(a.d_slot[row]) * a.slot_stride : 0;
    const KV* k_cache = static_cast<const KV*>(a.k_cache) + cache_off;
    const KV* v_cache = static_cast<const KV*>(a.v_cache) + cache_off;
    float* partial = a.partial + row * a.partial_stride;
    int* arrivals = a.arrivals + row * a.n_kv_heads;
    auto store_out = [&](int i, float v) {
        if (a.out_w) static_cast<W*>(a.out_w)[size_t(row) * a.out_stride + i] = from_float<W>(v);
        else a.out[i] = v;
    };
    const int first = a.window > 0 ? max(0, len - a.window) : 0;
    const int chunk = split_chunk(len - first, a.n_splits);
    const int n_active = min(a.n_splits, (len - first + chunk - 1) / chunk);  // splits that see keys
    const int start = first + split * chunk, end = min(start + chunk, len);
    float* s_q = smem;                  // [group][hd]
    float* s_p = smem + group * hd;     // [group][max_chunk]
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    if (start >= end) return;  // an idle split: the active ones count their arrivals among themselves
    {
        // The cached keys and values before pos were written by earlier steps: under PDL they are
        // pulled into L2 while the q/k/v GEMV finishes, so the score and output loops below wait
        // on L2 instead of DRAM. One 128-byte line per thread and step.
        const int lines = int((size_t(hd) * sizeof(KV) + 127) / 128), n = (min(end, pos) - start) * lines;
        for (int i = threadIdx.x; i < 2 * n; i += blockDim.x) {
            const int t = i < n ? i : i - n;
            const KV* cache = i < n ? k_cache : v_cache;
            const char* line = reinterpret_cast<const char*>(cache + size_t(start + t / lines) * kv_dim + size_t(kvh) * hd) + (t % lines) * 128;
            asm volatile("prefetch.global.L2 [%0];" ::"l"(line));
        }
    }
    pdl_wait();  // q, k and v are the previous kernel's output
    pdl_launch_dependents();
    {
        if constexpr (ROPE) {
            // One warp per head: the group's q heads, and the new k when this split holds the
            // newest position (its k and v go into the cache before the scores read it). A
            // KV-shared layer (r.k null) writes nothing: its source layer wrote the row this step.
            const RopeArgs& r = a.rope;
            const float* rq = r.q + size_t(row) * r.q_stride;
            const float* rk = r.k ? r.k + size_t(row) * r.k_stride : nullptr;
            const float* rv = r.v + size_t(row) * r.v_stride;
            const bool newest = end == len && rk;
            float* s_k = s_p;  // borrowed until the scores are written
            for (int task = warp; task < group + (newest ? 1 : 0); task += n_warps) {
                if (task < group) {
                    const int h = kvh * group + task;
                    const W* bq = static_cast<const W*>(r.bq);
                    prepare_head<W>(s_q + task * hd, rq + size_t(h) * hd, bq ? bq + size_t(h) * hd : nullptr,
                                    static_cast<const W*>(r.q_norm), r.norm_offset, r.norm_eps, hd, r.inv_freq, r.rotary_dim,
                                    r.attention_factor, pos);
                } else {
                    const W* bk = static_cast<const W*>(r.bk);
                    const W* bv = static_cast<const W*>(r.bv);
                    prepare_head<W>(s_k, rk + size_t(kvh) * hd, bk ? bk + size_t(kvh) * hd : nullptr,
                                    static_cast<const W*>(r.k_norm), r.norm_offset, r.norm_eps, hd, r.inv_freq, r.rotary_dim,
                                    r.attention_factor, pos);
                    KV* kc = static_cast<KV*>(r.k_cache) + cache_off + size_t(pos) * kv_dim + size_t(kvh) * hd;
                    KV* vc = static_cast<KV*>(r.v_cache) + cache_off + size_t(pos) * kv_dim + size_t(kvh) * hd;
                    write_kv_head<W, KV>(kc, vc, s_k, rv + size_t(kvh) * hd, bv ? bv + size_t(kvh) * hd : nullptr, hd, r.v_norm,
                                         r.norm_eps);
                }
            }
        } else {
            for (int i = threadIdx.x; i < group * hd; i += blockDim.x) s_q[i] = a.q[size_t(kvh * group) * hd + i];
        }
        __syncthreads();  // also makes this block's cache writes visible to its own reads below
        const KV* kc = k_cache;
        const KV* vc = v_cache;
        // Scores: one warp per key row, lanes across head_dim; each warp loads k_batch rows before
        // using any, so their DRAM latencies overlap instead of queueing one after another.
        constexpr int k_batch = 4;
        for (int j0 = start + warp; j0 < end; j0 += k_batch * n_warps) {
            float kv_reg[k_batch][NR];
#pragma unroll
            for (int b = 0; b < k_batch; ++b) {
                const int j = j0 + b * n_warps;
                if (j < end) {
                    const KV* krow = kc + size_t(j) * kv_dim + size_t(kvh) * hd;
#pragma unroll
                    for (int i = 0; i < NR; ++i)
                        if (lane + 32 * i < hd) kv_reg[b][i] = to_float(krow[lane + 32 * i]);
                }
            }
#pragma unroll
            for (int b = 0; b < k_batch; ++b) {
                const int j = j0 + b * n_warps;
                if (j >= end) break;
                for (int g = 0; g < group; ++g) {
                    float dot = 0;
#pragma unroll
                    for (int i = 0; i < NR; ++i)
                        if (lane + 32 * i < hd) dot += s_q[g * hd + lane + 32 * i] * kv_reg[b][i];
                    dot = warp_sum(dot) * a.scale;
                    if (a.softcap > 0) dot = a.softcap * tanhf(dot / a.softcap);
                    if (lane == 0) s_p[g * max_chunk + (j - start)] = dot;
                }
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
        // Output: threads across (head, dim); V rows read coalesced. A lone active split (short
        // contexts) normalizes and writes the result itself: no partials, no merge.
        float* part = partial + (size_t(kvh) * a.n_splits + split) * group * (hd + 2);
        for (int i = threadIdx.x; i < group * hd; i += blockDim.x) {
            const int g = i / hd, d = i % hd;
            float acc = 0;
            const KV* vcol = vc + size_t(start) * kv_dim + size_t(kvh) * hd + d;
#pragma unroll 8
            for (int j = 0; j < n; ++j) acc += s_p[g * max_chunk + j] * to_float(vcol[size_t(j) * kv_dim]);
            if (n_active == 1) store_out((kvh * group + g) * hd + d, acc / s_l[g]);
            else part[g * (hd + 2) + d] = acc;
        }
        if (n_active == 1) return;
        for (int g = threadIdx.x; g < group; g += blockDim.x) {
            part[g * (hd + 2) + hd] = s_m[g];
            part[g * (hd + 2) + hd + 1] = s_l[g];
        }
    }
    // The last of the KV head's active blocks to arrive merges (threadFenceReduction pattern: every
    // writer fences before the arrival count, the last arrival reads through L2).
    __threadfence();
    __syncthreads();
    __shared__ bool s_last;
    if (threadIdx.x == 0) s_last = atomicAdd(&arrivals[kvh], 1) == n_active - 1;
    __syncthreads();
    if (!s_last) return;
    if (threadIdx.x == 0) arrivals[kvh] = 0;  // ready for the next launch (graph replay)
    const size_t stride = size_t(group) * (hd + 2);
    const float* base = partial + size_t(kvh) * a.n_splits * stride;
    __shared__ float s_gm[k_max_group], s_gl[k_max_group];
    for (int g = warp; g < group; g += n_warps) {
        float m = -INFINITY;
        for (int sp = lane; sp < n_active; sp += 32) m = fmaxf(m, __ldcg(base + sp * stride + g * (hd + 2) + hd));
        m = warp_max(m);
        float l = 0;
        for (int sp = lane; sp < n_active; sp += 32) {
            const float* ps = base + sp * stride + g * (hd + 2);
            l += __ldcg(ps + hd + 1) * __expf(__ldcg(ps + hd) - m);
        }
        l = warp_sum(l);
        if (lane == 0) {
            s_gm[g] = m;
            s_gl[g] = l;
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < group * hd; i += blockDim.x) {
        const int g = i / hd, d = i % hd;
        float acc = 0;
        for (int sp = 0; sp < n_active; ++sp) {
            const float* ps = base + sp * stride + g * (hd + 2);
            acc += __ldcg(ps + d) * __expf(__ldcg(ps + hd) - s_gm[g]);
        }
        store_out((kvh * group + g) * hd + d, acc / s_gl[g]);
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
    return std::max(1, std::min(k_max_decode_splits, (2 * n_sms + n_kv_heads - 1) / n_kv_heads));
}

void decode_attention(const DecodeAttnArgs& a, cudaStream_t s) {
    const int group = a.n_heads / a.n_kv_heads;
    if (group > k_max_group || a.head_dim > 512) fail("decode attention: GQA group {} or head_dim {} too large", group, a.head_dim);
    const int max_chunk = std::max(k_min_chunk, (a.n_ctx + a.n_splits - 1) / a.n_splits);
    // s_p doubles as the newest k row under ROPE, so it holds at least head_dim floats.
    const size_t smem = (size_t(group) * a.head_dim + std::max(size_t(group) * max_chunk, size_t(a.head_dim))) * sizeof(float);
    if (a.n_rows > 1 && (!a.rope_fused || !a.out_w)) fail("decode attention: a batched step needs rope_fused and out_w");
    const dim3 grid(unsigned(a.n_kv_heads), unsigned(a.n_splits), unsigned(a.n_rows));
    const DType wdt = a.rope_fused ? a.rope.wdt : DType::f32;
    TT_DISPATCH_FLOAT(wdt, W, TT_DISPATCH_FLOAT(a.kv_dt, KV, {
        auto k = a.head_dim <= 256 ? (a.rope_fused ? decode_attn_kernel<W, KV, true, 8> : decode_attn_kernel<W, KV, false, 8>)
                                   : (a.rope_fused ? decode_attn_kernel<W, KV, true, 16> : decode_attn_kernel<W, KV, false, 16>);
        if (smem > 48 * 1024) TT_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
        launch(k, grid, k_attn_threads, smem, s, a, max_chunk);
    }));
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
