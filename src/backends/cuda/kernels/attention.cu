// Attention kernels. Decode: flash-decoding — the visible keys are split evenly over n_splits
// blocks per KV head, each block scores its keys for all query heads of the GQA group (K and V rows
// read once), keeps an unnormalized partial output with its running max and sum, and the last
// block to finish merges the splits. RoPE and the KV-cache write of the new token can ride in the
// same launch (one kernel per layer instead of three, which is what small models pay for). This
// file's decode kernel runs on the CUDA cores and takes every dtype and head_dim; 16-bit and 8-bit
// caches of head_dim 64 and 128 go to the tensor-core one (decode_attention_mma.cu), and both share
// decode_attention.cuh. Prefill, for the models the flash kernel (flash_attention.cu) does not
// cover: the masked softmax between the two cuBLAS products (scores = Q K^T, out = P V).
#include "backends/cuda/kernels/decode_attention.cuh"
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/launch.cuh"
#include "backends/cuda/kernels/ptx.cuh"

#include <type_traits>

namespace tt::cuda {

namespace {

constexpr int k_attn_threads = 256;
// Keys per split at least: short contexts use few splits (the merge then reads few partials).
constexpr int k_min_chunk = 32;

// E contiguous elements of one K or V row (in shared memory) as floats, in 16-byte loads (8-byte
// ones for the 8-bit cache, whose E = 8 elements are 8 bytes).
template <typename KV, int E>
__device__ __forceinline__ void load_row_piece(const KV* p, float (&out)[E]) {
    if constexpr (sizeof(KV) == 1) {
        static_assert(E % 8 == 0);
#pragma unroll
        for (int c = 0; c < E / 8; ++c) {
            const uint2 raw = *reinterpret_cast<const uint2*>(p + c * 8);
            const KV* e = reinterpret_cast<const KV*>(&raw);
#pragma unroll
            for (int i = 0; i < 8; ++i) out[c * 8 + i] = to_float(e[i]);
        }
    } else {
        constexpr int vec = 16 / sizeof(KV);
        static_assert(E % vec == 0);
#pragma unroll
        for (int c = 0; c < E / vec; ++c) {
            const int4 raw = *reinterpret_cast<const int4*>(p + c * vec);
            const KV* e = reinterpret_cast<const KV*>(&raw);
#pragma unroll
            for (int i = 0; i < vec; ++i) out[c * vec + i] = to_float(e[i]);
        }
    }
}

// The keys stream through shared memory in tiles of tile_rows(...) K and V rows, k_stages tiles in
// flight (cp.async): the bytes a block has in flight no longer cost registers, so a block keeps
// ~3 tiles (48 KB) of loads outstanding while its warps work on the fourth.
constexpr int k_stages = 4;
__host__ __device__ constexpr int tile_rows(int head_dim, int kv_bytes) {
    const int r = 8192 / (head_dim * kv_bytes);  // 8 KB of K and 8 KB of V per tile
    return r < 4 ? 4 : r > 64 ? 64 : r;
}
// A stage's bytes: R K rows, R V rows and, for the 8-bit cache, their R + R scales (rounded up to
// whole 16-byte pieces, the next stage's alignment).
__host__ __device__ constexpr int stage_bytes(int head_dim, int kv_bytes) {
    const int r = tile_rows(head_dim, kv_bytes);
    return (2 * r * head_dim * kv_bytes + (kv_bytes == 1 ? 2 * r * 4 : 0) + 15) / 16 * 16;
}

// One block per (KV head, split, row); decode::load_queries prepares the group's q heads (and
// writes the newest k/v when ROPE). The split's keys then stream through shared memory (tile_rows, k_stages). In a tile, each key row
// is read by T lanes (E elements each, 16-byte loads; T = head_dim / E rounded up to a power of
// two), so a warp reads 32 / T rows per load and U rows per lane per step, every K and V element
// loaded once for GB of the group's heads (a larger group takes several passes). Each warp keeps a
// running softmax (max, sum, unnormalized output) per head over its keys — K and V of a key are
// used together, no score buffer — and the block's warps are merged through shared memory
// (decode::merge_warps). The last block of a KV head to finish merges the splits of its group
// (decode::merge_splits: no second launch).
// E: 8 up to head_dim 256, 16 for Gemma 4's 512. GB: 4, or 8 for groups of 5..8 (Qwen2.5's 7).
template <typename W, typename KV, bool ROPE, int E, int GB>
__global__ void __launch_bounds__(k_attn_threads, E == 8 ? 2 : 1) decode_attn_kernel(DecodeAttnArgs a) {
    constexpr int U = 2;
    extern __shared__ __align__(16) float smem[];
    const decode::Block<KV> b = decode::block_of<KV>(a, k_min_chunk);
    const int hd = b.hd, group = b.group, kv_dim = b.kv_dim, kvh = b.kvh, start = b.start, end = b.end;
    const KV* k_cache = b.k_cache;
    const KV* v_cache = b.v_cache;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    constexpr bool Q8 = sizeof(KV) == 1;  // the 8-bit cache: each row's scale beside it in the stage
    const int R = tile_rows(hd, int(sizeof(KV))), row_bytes = hd * int(sizeof(KV)), st_bytes = stage_bytes(hd, int(sizeof(KV)));
    float* s_q = smem;                  // [group][hd]
    float* s_k = smem + group * hd;     // [hd]: the newest k while it is prepared
    // [k_stages][K tile | V tile] of R rows; after the keys, [n_warps][GB][hd + 2]: the warps'
    // outputs, max and sum; then the split merge's weights (decode::smem_bytes sizes it).
    float* s_tiles = s_k + hd;
    float* s_red = s_tiles;
    if (start >= end) return;  // an idle split: the active ones count their arrivals among themselves
    decode::prefetch_first_rows(b, 2 * k_stages * R);
    pdl_wait();  // q, k and v are the previous kernel's output
    pdl_launch_dependents();
    decode::load_queries<W, KV, ROPE>(a, b, s_q, s_k);

    const int n_tiles = (end - start + R - 1) / R;
    const int pieces = row_bytes / 16;  // 16-byte pieces per row
    // Tile t into stage st: K rows then V rows (then, Q8, their scales); rows past the split's end are zeros.
    auto issue = [&](int t, int st) {
        if (t < n_tiles) {
            char* dst = reinterpret_cast<char*>(s_tiles) + size_t(st) * st_bytes;
            for (int c = threadIdx.x; c < 2 * R * pieces; c += blockDim.x) {
                const int which = c / (R * pieces), rem = c % (R * pieces), r = rem / pieces, pc = rem % pieces;
                const int j = start + t * R + r;
                const KV* src = (which ? v_cache : k_cache) + size_t(j < end ? j : start) * kv_dim + size_t(kvh) * hd;
                cp_async16(smem_addr(dst + (which * R + r) * row_bytes + pc * 16), reinterpret_cast<const char*>(src) + pc * 16, j < end);
            }
            if constexpr (Q8) {
                for (int c = threadIdx.x; c < 2 * R; c += blockDim.x) {
                    const int which = c / R, r = c % R, j = start + t * R + r;
                    const float* src = (which ? b.v_scale : b.k_scale) + size_t(j < end ? j : start) * a.n_kv_heads + kvh;
                    cp_async4(smem_addr(dst + 2 * R * row_bytes + c * 4), src, j < end);
                }
            }
        }
        cp_async_commit();  // (an empty group past the last tile keeps the count of groups in step)
    };

    int T = 1;  // lanes per key row (a power of two, so that rows never straddle a warp's halves)
    while (T * E < hd) T <<= 1;
    const int rows_per_load = 32 / T, sub = lane / T, piece = (lane % T) * E;
    const bool reads = piece < hd;  // head_dim 96: 12 of 16 lanes hold a piece
    for (int g0 = 0; g0 < group; g0 += GB) {
        const int ng = min(GB, group - g0);
        float m[GB], l[GB], acc[GB][E];
#pragma unroll
        for (int g = 0; g < GB; ++g) {
            m[g] = -INFINITY;
            l[g] = 0;
#pragma unroll
            for (int e = 0; e < E; ++e) acc[g][e] = 0;
        }
        for (int t = 0; t < k_stages - 1; ++t) issue(t, t);
        for (int t = 0; t < n_tiles; ++t) {
            issue(t + k_stages - 1, (t + k_stages - 1) % k_stages);
            cp_async_wait<k_stages - 1>();
            __syncthreads();  // tile t is in shared memory for every thread
            const KV* kt = reinterpret_cast<const KV*>(reinterpret_cast<const char*>(s_tiles) + size_t(t % k_stages) * st_bytes);
            const KV* vt = kt + size_t(R) * hd;
            const float* kst = reinterpret_cast<const float*>(vt + size_t(R) * hd);  // Q8: K then V scales
            // rw is the warp's first row of the step (warp-uniform: the shuffles below need every
            // lane); this lane's rows are rw + sub + u * rows_per_load.
            for (int rw = warp * rows_per_load * U; rw < R; rw += n_warps * rows_per_load * U) {
                float kr[U][E], vr[U][E];
                float ksc[U], vsc[U];  // Q8: the rows' scales (1 otherwise)
                bool valid[U];
#pragma unroll
                for (int u = 0; u < U; ++u) {
                    const int r = rw + sub + u * rows_per_load;
                    valid[u] = r < R && start + t * R + r < end;
                    ksc[u] = Q8 && r < R ? kst[r] : 1.0f;
                    vsc[u] = Q8 && r < R ? kst[R + r] : 1.0f;
                    if (reads && r < R) {
                        load_row_piece<KV, E>(kt + size_t(r) * hd + piece, kr[u]);
                        load_row_piece<KV, E>(vt + size_t(r) * hd + piece, vr[u]);
                    } else {
#pragma unroll
                        for (int e = 0; e < E; ++e) kr[u][e] = vr[u][e] = 0;
                    }
                }
#pragma unroll
                for (int g = 0; g < GB; ++g) {
                    if (g >= ng) break;
                    float qv[E];
                    if (reads) {
#pragma unroll
                        for (int e = 0; e < E; e += 4) *reinterpret_cast<float4*>(&qv[e]) = *reinterpret_cast<const float4*>(s_q + (g0 + g) * hd + piece + e);
                    } else {
#pragma unroll
                        for (int e = 0; e < E; ++e) qv[e] = 0;
                    }
                    float sc[U], mx = m[g];
#pragma unroll
                    for (int u = 0; u < U; ++u) {
                        float d = 0;
#pragma unroll
                        for (int e = 0; e < E; ++e) d += qv[e] * kr[u][e];
                        for (int o = T / 2; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
                        if constexpr (Q8) d *= ksc[u];  // q . (s k_q) = s (q . k_q)
                        d *= a.scale;
                        if (a.softcap > 0) d = a.softcap * tanhf(d / a.softcap);
                        sc[u] = valid[u] ? d : -INFINITY;
                        mx = fmaxf(mx, sc[u]);
                    }
                    // Rescaled only when the running max grows (seldom after a split's first keys); mx
                    // stays -inf while none of this lane's rows has been in range.
                    if (mx > m[g]) {
                        const float corr = __expf(m[g] - mx);
                        m[g] = mx;
                        l[g] *= corr;
#pragma unroll
                        for (int e = 0; e < E; ++e) acc[g][e] *= corr;
                    }
#pragma unroll
                    for (int u = 0; u < U; ++u) {
                        const float p = sc[u] == -INFINITY ? 0.0f : __expf(sc[u] - mx);
                        l[g] += p;
                        const float pv = Q8 ? p * vsc[u] : p;  // p (s v_q) = (p s) v_q
#pragma unroll
                        for (int e = 0; e < E; ++e) acc[g][e] += pv * vr[u][e];
                    }
                }
            }
            __syncthreads();  // every warp is done with stage t % k_stages before it is refilled
        }
        cp_async_wait_all();  // (only empty groups are left)
        // The warp's row groups (sub) into one state, then each warp's into shared memory.
#pragma unroll
        for (int g = 0; g < GB; ++g) {
            for (int o = T; o < 32; o <<= 1) {
                const float mo = __shfl_xor_sync(0xffffffffu, m[g], o), lo = __shfl_xor_sync(0xffffffffu, l[g], o);
                const float mm = fmaxf(m[g], mo);
                const float c0 = mm == -INFINITY ? 0.0f : __expf(m[g] - mm), c1 = mm == -INFINITY ? 0.0f : __expf(mo - mm);
                l[g] = l[g] * c0 + lo * c1;
#pragma unroll
                for (int e = 0; e < E; ++e) acc[g][e] = acc[g][e] * c0 + __shfl_xor_sync(0xffffffffu, acc[g][e], o) * c1;
                m[g] = mm;
            }
            if (g < ng) {
                float* r = s_red + (warp * GB + g) * (hd + 2);
                if (sub == 0 && reads)
#pragma unroll
                    for (int e = 0; e < E; ++e) r[piece + e] = acc[g][e];
                if (lane == 0) {
                    r[hd] = m[g];
                    r[hd + 1] = l[g];
                }
            }
        }
        __syncthreads();
        decode::merge_warps<W, KV>(a, b, s_red, n_warps, GB, g0, ng);
        __syncthreads();  // s_red (the tiles' space) is free for the next pass
    }
    decode::merge_splits<W, KV>(a, b, s_tiles);  // s_tiles: the split merge's weights
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
    const int group = a.n_heads / a.n_kv_heads, hd = a.head_dim;
    if (group > decode::k_max_group || hd > 512 || hd % 8 != 0)
        fail("decode attention: GQA group {} or head_dim {} not supported (at most {} and 512, head_dim a multiple of 8)", group,
             hd, decode::k_max_group);
    if (a.n_rows > 1 && (!a.rope_fused || !a.out_w)) fail("decode attention: a batched step needs rope_fused and out_w");
    // The fused path reads the cache in the weights' dtype (runtime/device_buffers.h, kv_cache_dtype),
    // or the 8-bit cache.
    const bool q8 = a.kv_dt == DType::i8;
    if (a.rope_fused && a.kv_dt != a.rope.wdt && !q8)
        fail("decode attention: a {} KV cache with {} weights (the fused path keeps the cache in the weights' dtype)",
             dtype_name(a.kv_dt), dtype_name(a.rope.wdt));
    if (q8 && (hd % 16 != 0 || !a.k_scale || !a.v_scale || (a.rope_fused && a.rope.k && (!a.rope.k_scale || !a.rope.v_scale))))
        fail("decode attention: the 8-bit KV cache needs head_dim a multiple of 16 (got {}) and its row scales", hd);
    if (!a.cuda_cores_only && decode_attention_tensor_cores(a.kv_dt, hd, group)) {
        decode::launch_mma(a, s);
        TT_CUDA_LAUNCH_CHECK();
        return;
    }
    const int E = hd <= 256 ? 8 : 16, GB = E == 8 && group > 4 ? 8 : 4;
    const size_t kv_bytes = dtype_size(a.kv_dt);
    const size_t tiles = size_t(k_stages) * size_t(stage_bytes(hd, int(kv_bytes)));
    const size_t smem = decode::smem_bytes(group, hd, tiles, k_attn_threads / 32, GB);
    const dim3 grid(unsigned(a.n_kv_heads), unsigned(a.n_splits), unsigned(a.n_rows));
    auto run = [&](auto kernel) {
        allow_dynamic_smem(kernel, smem);
        launch(kernel, grid, k_attn_threads, smem, s, a);
    };
    // The kernel for weights W (q and the output f32 without ROPE) and cache KV.
    auto pick = [&](auto w, auto kv, auto rope) {
        using W = decltype(w);
        using KV = decltype(kv);
        constexpr bool R = decltype(rope)::value;
        if (E == 16) run(decode_attn_kernel<W, KV, R, 16, 4>);
        else if (GB == 8) run(decode_attn_kernel<W, KV, R, 8, 8>);
        else run(decode_attn_kernel<W, KV, R, 8, 4>);
    };
    using Rope = std::true_type;
    using NoRope = std::false_type;
    if (q8) {  // the 8-bit cache beside weights of any float dtype
        if (a.rope_fused) TT_DISPATCH_FLOAT(a.rope.wdt, W, pick(W{}, int8_t{}, Rope{}));
        else pick(float{}, int8_t{}, NoRope{});
    } else {  // ROPE: the weights' dtype is the cache's
        TT_DISPATCH_FLOAT(a.kv_dt, KV, {
            if (a.rope_fused) pick(KV{}, KV{}, Rope{});
            else pick(float{}, KV{}, NoRope{});
        });
    }
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
