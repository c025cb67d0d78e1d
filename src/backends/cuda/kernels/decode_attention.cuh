// The parts the two decode attention kernels share (attention.cu: CUDA cores, every dtype and
// head_dim; decode_attention_mma.cu: tensor cores, 16-bit caches): which keys a block (KV head,
// split, row) takes, the prologue that prepares its q heads (and writes the newest k/v when RoPE is
// fused), and the two merges after the keys — the block's warps, then the splits of a KV head,
// done by the last block to finish. Both kernels keep the same partial layout
// ([n_kv_heads, n_splits, group, decode_attention_partial_row(head_dim)]: the unnormalized output,
// then the max in natural units, then the sum, then padding), so they round alike where they merge.
#pragma once

#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/rope.cuh"

#include <algorithm>

namespace tt::cuda::decode {

constexpr int k_max_group = 16;

// The tensor-core kernel (decode_attention_mma.cu), for what decode_attention_tensor_cores accepts;
// decode_attention (attention.cu) checks the arguments and chooses.
void launch_mma(const DecodeAttnArgs& a, cudaStream_t s);

// Dynamic shared memory of a decode attention block: the prologue's [group][hd] q heads and [hd]
// new k (f32, load_queries), then one space that the kernel's K/V tiles (tile_bytes) use first,
// merge_warps' states of n_warps x gb heads next, and merge_splits' per-split weights last.
inline size_t smem_bytes(int group, int hd, size_t tile_bytes, int n_warps, int gb) {
    const size_t red = size_t(n_warps) * size_t(gb) * size_t(hd + 2) * sizeof(float);
    const size_t weights = size_t(k_max_decode_splits) * size_t(group) * sizeof(float);
    return size_t(group + 1) * size_t(hd) * sizeof(float) + std::max({tile_bytes, red, weights});
}

// One block's place in the launch (grid: n_kv_heads x n_splits x n_rows) and its keys [start, end).
template <typename KV>
struct Block {
    int kvh, split, row, hd, group, kv_dim, pos, len;
    size_t cache_off;
    const KV *k_cache, *v_cache;
    const float *k_scale, *v_scale;  // KV int8_t: the rows' scales ([n_ctx, n_kv_heads], this sequence's)
    float* partial;
    int* arrivals;
    int n_active;    // splits that see keys
    int start, end;  // this split's keys
};

// Keys per split: the visible keys evenly over n_splits, at least min_chunk (short contexts use
// few splits, so the merge reads few partials). Computed on the device from the current length, so
// one graph-captured launch serves every position.
template <typename KV>
__device__ __forceinline__ Block<KV> block_of(const DecodeAttnArgs& a, int min_chunk) {
    Block<KV> b;
    b.kvh = blockIdx.x;
    b.split = blockIdx.y;
    b.row = blockIdx.z;
    b.hd = a.head_dim;
    b.group = a.n_heads / a.n_kv_heads;
    b.kv_dim = a.n_kv_heads * b.hd;
    // The position was copied up before the step's first kernel: it does not depend on the previous one.
    b.pos = a.d_pos[b.row];
    b.len = b.pos + 1;
    // A batched step's row: its own sequence's caches, inputs, output and scratch.
    b.cache_off = a.d_slot ? size_t(a.d_slot[b.row]) * a.slot_stride : 0;
    b.k_cache = static_cast<const KV*>(a.k_cache) + b.cache_off;
    b.v_cache = static_cast<const KV*>(a.v_cache) + b.cache_off;
    b.k_scale = a.k_scale ? a.k_scale + b.cache_off / b.hd : nullptr;
    b.v_scale = a.v_scale ? a.v_scale + b.cache_off / b.hd : nullptr;
    b.partial = a.partial + b.row * a.partial_stride;
    b.arrivals = a.arrivals + b.row * a.n_kv_heads;
    const int first = a.window > 0 ? max(0, b.len - a.window) : 0;
    const int chunk = max(min_chunk, (b.len - first + a.n_splits - 1) / a.n_splits);
    b.n_active = min(a.n_splits, (b.len - first + chunk - 1) / chunk);
    b.start = first + b.split * chunk;
    b.end = min(b.start + chunk, b.len);
    return b;
}

template <typename W>
__device__ __forceinline__ void store_out(const DecodeAttnArgs& a, int row, int i, float v) {
    if (a.out_w) static_cast<W*>(a.out_w)[size_t(row) * a.out_stride + i] = from_float<W>(v);
    else a.out[i] = v;
}

// The cached keys and values before pos were written by earlier steps: under PDL the split's first
// `rows` rows are pulled into L2 while the q/k/v GEMV finishes (no more: a long split's whole range
// would not stay in L2 until it is read).
template <typename KV>
__device__ __forceinline__ void prefetch_first_rows(const Block<KV>& b, int rows) {
    const int row_bytes = b.hd * int(sizeof(KV)), lines = (row_bytes + 127) / 128;
    const int n = (min(min(b.end, b.pos), b.start + rows) - b.start) * lines;
    for (int i = threadIdx.x; i < 2 * n; i += blockDim.x) {
        const int t = i < n ? i : i - n;
        const KV* cache = i < n ? b.k_cache : b.v_cache;
        const char* line = reinterpret_cast<const char*>(cache + size_t(b.start + t / lines) * b.kv_dim + size_t(b.kvh) * b.hd) +
                           (t % lines) * 128;
        asm volatile("prefetch.global.L2 [%0];" ::"l"(line));
    }
}

// The group's q heads into s_q ([group][hd] f32), after pdl_wait(). ROPE: q and the newest k/v are
// the raw projections; one warp per head prepares them (bias, q/k norm, RoPE: the same rope.cuh as
// prefill), and the block whose split holds the newest position also writes that position's k and
// v into the cache before any key is read. A KV-shared layer (r.k null) writes nothing: its source
// layer wrote the row this step. s_k: [hd] f32 scratch for the new k; s_v (or null): [hd], the new
// v in f32. fence: whether a later cp.async reads the new row back from the cache (false when the
// caller puts it into its tile from s_k and s_v itself). HD > 0 (hd, with s_v given): hc holds the
// norms' weights and RoPE's cos and sin, taken before pdl_wait (rope.cuh, head_consts), so a head
// waits on its projection only, and the newest v is loaded beside k's projection instead of after
// it. Ends with a barrier.
template <typename W, typename KV, bool ROPE, int HD = 0>
__device__ void load_queries(const DecodeAttnArgs& a, const Block<KV>& b, float* s_q, float* s_k, float* s_v = nullptr,
                             bool fence = true, const HeadConsts<(HD > 0 ? HD : 64)>* hc = nullptr) {
    const int warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5, hd = b.hd, group = b.group, kvh = b.kvh;
    if constexpr (ROPE) {
        const RopeArgs& r = a.rope;
        const float* rq = r.q + size_t(b.row) * r.q_stride;
        const float* rk = r.k ? r.k + size_t(b.row) * r.k_stride : nullptr;
        const float* rv = r.v + size_t(b.row) * r.v_stride;
        const bool newest = b.end == b.len && rk;
        for (int task = warp; task < group + (newest ? 1 : 0); task += n_warps) {
            if (task < group) {
                const int h = kvh * group + task;
                const W* bq = static_cast<const W*>(r.bq);
                if constexpr (HD > 0)
                    prepare_head<W, HD>(s_q + task * hd, rq + size_t(h) * hd, bq ? bq + size_t(h) * hd : nullptr, *hc, true,
                                        r.q_norm != nullptr, r.norm_eps, r.rotary_dim);
                else
                    prepare_head<W>(s_q + task * hd, rq + size_t(h) * hd, bq ? bq + size_t(h) * hd : nullptr,
                                    static_cast<const W*>(r.q_norm), r.norm_offset, r.norm_eps, hd, r.inv_freq, r.rotary_dim,
                                    r.attention_factor, b.pos);
            } else {
                const W* bk = static_cast<const W*>(r.bk);
                const W* bv = static_cast<const W*>(r.bv);
                const float* vsrc = rv + size_t(kvh) * hd;
                if constexpr (HD > 0) {
                    // v (and its bias) loaded with k's projection; v + bias goes through s_v, from
                    // which write_kv_head takes it (bias null: the same sum).
                    const W* bvh = bv ? bv + size_t(kvh) * hd : nullptr;
                    float vraw[HD / 32], vb[HD / 32];
                    const int lane = threadIdx.x & 31;
#pragma unroll
                    for (int j = 0; j < HD / 32; ++j) {
                        vraw[j] = vsrc[lane + 32 * j];
                        vb[j] = bvh ? to_float(bvh[lane + 32 * j]) : 0.0f;
                    }
                    prepare_head<W, HD>(s_k, rk + size_t(kvh) * hd, bk ? bk + size_t(kvh) * hd : nullptr, *hc, false,
                                        r.k_norm != nullptr, r.norm_eps, r.rotary_dim);
#pragma unroll
                    for (int j = 0; j < HD / 32; ++j) s_v[lane + 32 * j] = vraw[j] + vb[j];
                    vsrc = s_v;
                    bv = nullptr;
                } else {
                    prepare_head<W>(s_k, rk + size_t(kvh) * hd, bk ? bk + size_t(kvh) * hd : nullptr,
                                    static_cast<const W*>(r.k_norm), r.norm_offset, r.norm_eps, hd, r.inv_freq, r.rotary_dim,
                                    r.attention_factor, b.pos);
                }
                KV* kc = static_cast<KV*>(r.k_cache) + b.cache_off + size_t(b.pos) * b.kv_dim + size_t(kvh) * hd;
                KV* vc = static_cast<KV*>(r.v_cache) + b.cache_off + size_t(b.pos) * b.kv_dim + size_t(kvh) * hd;
                float *ks = nullptr, *vs = nullptr;  // the 8-bit cache's row scales
                if (r.k_scale) {
                    const size_t si = b.cache_off / hd + size_t(b.pos) * a.n_kv_heads + kvh;
                    ks = r.k_scale + si;
                    vs = r.v_scale + si;
                }
                write_kv_head<W, KV>(kc, vc, s_k, vsrc, bv ? bv + size_t(kvh) * hd : nullptr, hd, r.v_norm, r.norm_eps, ks, vs, s_v);
            }
        }
        // The newest row goes to the cache from this block's threads and comes back through
        // cp.async, which reads L2: the fence puts the writes there before the barrier.
        if (newest && fence) __threadfence();
    } else {
        for (int i = threadIdx.x; i < group * hd; i += blockDim.x) s_q[i] = a.q[size_t(kvh * group) * hd + i];
    }
    __syncthreads();
}

// The block's warps' states for heads g0 .. g0 + ng - 1 into one: s_red[(w * gb + g) * (hd + 2)]
// holds warp w's unnormalized output for head g0 + g, then its max (natural units; -inf for a warp
// without keys) and sum. A lone active split (short contexts) normalizes and writes the result
// itself: no partials, no merge; otherwise the block's partial goes out for merge_splits.
template <typename W, typename KV>
__device__ void merge_warps(const DecodeAttnArgs& a, const Block<KV>& b, const float* s_red, int n_warps, int gb, int g0, int ng) {
    const int hd = b.hd, group = b.group, prow = decode_attention_partial_row(hd);
    float* part = b.partial + (size_t(b.kvh) * a.n_splits + b.split) * group * prow;
    for (int i = threadIdx.x; i < ng * hd; i += blockDim.x) {
        const int g = i / hd, d = i % hd;
        float mm = -INFINITY;
        for (int w = 0; w < n_warps; ++w) mm = fmaxf(mm, s_red[(w * gb + g) * (hd + 2) + hd]);
        float acc_d = 0, l_sum = 0;
        for (int w = 0; w < n_warps; ++w) {
            const float* r = s_red + (w * gb + g) * (hd + 2);
            const float c = r[hd] == -INFINITY ? 0.0f : __expf(r[hd] - mm);
            acc_d += r[d] * c;
            l_sum += r[hd + 1] * c;
        }
        if (b.n_active == 1) {
            store_out<W>(a, b.row, (b.kvh * group + g0 + g) * hd + d, acc_d / l_sum);
        } else {
            part[(g0 + g) * prow + d] = acc_d;
            if (d == 0) {
                part[(g0 + g) * prow + hd] = mm;
                part[(g0 + g) * prow + hd + 1] = l_sum;
            }
        }
    }
}

// After every block's merge_warps: the last of the KV head's active blocks to arrive merges their
// partials (threadFenceReduction pattern: every writer fences before the arrival count, the last
// arrival reads through L2). s_w: shared memory for k_max_decode_splits weights per head of the
// group. Called by every thread of every block that reached merge_warps.
template <typename W, typename KV>
__device__ void merge_splits(const DecodeAttnArgs& a, const Block<KV>& b, float* s_w) {
    if (b.n_active == 1) return;
    __threadfence();
    __syncthreads();
    __shared__ bool s_last;
    if (threadIdx.x == 0) s_last = atomicAdd(&b.arrivals[b.kvh], 1) == b.n_active - 1;
    __syncthreads();
    if (!s_last) return;
    if (threadIdx.x == 0) b.arrivals[b.kvh] = 0;  // ready for the next launch (graph replay)
    const int hd = b.hd, group = b.group, n_active = b.n_active, prow = decode_attention_partial_row(hd);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    const size_t stride = size_t(group) * prow;
    const float* base = b.partial + size_t(b.kvh) * a.n_splits * stride;
    // Each split's weight per head, exp(m_split - m) / l, in shared memory, so that the output loop
    // below is only independent loads and FMAs.
    for (int g = warp; g < group; g += n_warps) {
        float m = -INFINITY;
        for (int sp = lane; sp < n_active; sp += 32) m = fmaxf(m, __ldcg(base + sp * stride + g * prow + hd));
        m = warp_max(m);
        float l = 0;
        for (int sp = lane; sp < n_active; sp += 32) {
            const float* ps = base + sp * stride + g * prow;
            const float w = __expf(__ldcg(ps + hd) - m);
            s_w[g * n_active + sp] = w;
            l += __ldcg(ps + hd + 1) * w;
        }
        l = warp_sum(l);
        __syncwarp();
        for (int sp = lane; sp < n_active; sp += 32) s_w[g * n_active + sp] /= l;
    }
    __syncthreads();
    // The output in 16-byte pieces (rows are 16-byte aligned, head_dim a multiple of 8): a group of
    // 4 at head_dim 128 is one piece per thread of a 128-thread block, so each thread's loads over
    // the splits are its only chain of L2 round trips, eight in flight. This merge runs after the
    // last block's keys, in series with the step: with one output element per thread it measured
    // several microseconds per layer.
    const int pieces = hd / 4;
    const size_t stride4 = stride / 4;
    for (int i = threadIdx.x; i < group * pieces; i += blockDim.x) {
        const int g = i / pieces, d = (i % pieces) * 4;
        const float4* ps = reinterpret_cast<const float4*>(base + g * prow + d);
        const float* w = s_w + g * n_active;
        float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 8
        for (int sp = 0; sp < n_active; ++sp) {
            const float4 p = __ldcg(ps + sp * stride4);
            const float ws = w[sp];
            acc.x += p.x * ws;
            acc.y += p.y * ws;
            acc.z += p.z * ws;
            acc.w += p.w * ws;
        }
        const int o = (b.kvh * group + g) * hd + d;
        store_out<W>(a, b.row, o, acc.x);
        store_out<W>(a, b.row, o + 1, acc.y);
        store_out<W>(a, b.row, o + 2, acc.z);
        store_out<W>(a, b.row, o + 3, acc.w);
    }
}

}  // namespace tt::cuda::decode
