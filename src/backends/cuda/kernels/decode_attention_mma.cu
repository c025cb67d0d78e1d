// Decode attention on the tensor cores, for 16-bit and 8-bit caches of head_dim 64 or 128 (the
// CUDA-core kernel in attention.cu takes the rest): the GQA group's query heads are the 16 rows of
// an m16n8k16 tile (zero rows past the group), so one pass over a key's K and V row serves every
// head of the group. S = Q K^T runs as in the prefill flash kernel (flash_attention.cu, whose
// fragment-layout notes apply here unchanged); the online softmax and out += P V are that kernel's
// (flash_tile.cuh).
//
// Why: the CUDA-core kernel spends ~8 f32 FMAs, conversions and shuffles per cached element for a
// group of 4, which at 16k keys kept it at 0.59 instructions per scheduler per cycle and 16% of
// the memory bandwidth (bench/results/2026-12-03-h200-depth/attn-microbench.txt). Here a warp
// spends 32 mma and 16 ldmatrix per 16 keys of head_dim 128.
//
// Work split: a block (KV head, split, row) has k_warps warps, each with its own cp.async ring of
// k_stages stages of BN keys (K and V, 4 KB each), taking the split's chunks warp, warp + k_warps,
// ... — no barrier between warps until their states are merged (decode::merge_warps), then the
// splits (decode::merge_splits). Two blocks fit per SM.
//
// The prologue is a chain of L2 trips, and at a short context it is most of the kernel (9.6-11.2
// us a layer under ncu on the H200, 2026-12-06). With fused RoPE the first stages go out before
// pdl_wait (the keys before pos are earlier steps'), and the newest row, which this block writes,
// enters its stage from shared memory: no fence and no trip back through L2 for it. With a 16-bit
// cache that measured +2.4% decode on Qwen3-0.6B, +0.4% on the 8B at depth 0, +1.3% at 4096
// and +0.7% at 16384 (H100, 2026-12-07, bench/results/2026-12-07-h100-attn-early/). Not with the
// 8-bit cache: its newest row would have to be quantized again into the stage (two
// write_int8_row's true divisions on the critical path), and on the 8B INT4 that was slower at
// 4096 in both A/Bs (-0.2%, -0.7%) and a wash at depth 0 (-0.5%, +0.3%; H100, 2026-12-07,
// bench/results/2026-12-07-h100-three-patches/ and …-h100-session/no-kv8-early/). The q/k
// norms' weights and RoPE's cos and sin are taken before pdl_wait too (rope.cuh, HeadConsts), so
// that after it a head waits on its projection alone: +5.5% on Qwen3-0.6B, +1.9% on the 8B bf16
// at depth 0, +1.2% at 16384, +4.0% on the 8B INT4 (H100, 2026-12-07,
// bench/results/2026-12-07-h100-three-patches/).
//
// Rounding: q and the probabilities go to the cache's 16-bit type for the products (as prefill
// and transformers' bf16 attention do), f32 accumulation and softmax.
//
// The 8-bit cache (KV int8_t, runtime/kv_cache_type.h): each stage's INT8 rows and their scales
// arrive by cp.async, and the warp widens the rows into an f16 tile (exact: |q| <= 127) before
// the same products; the key scales multiply S before the softmax, the value scales P after it
// (its sum is of the unscaled P). q and P are then f16 whatever the weights' dtype (more mantissa
// than bf16; a query beyond f16's range, 65504, is not one a normed model makes).
#include "backends/cuda/kernels/decode_attention.cuh"
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/flash_tile.cuh"
#include "backends/cuda/kernels/launch.cuh"
#include "backends/cuda/kernels/ptx.cuh"

#include <type_traits>

namespace tt::cuda {

namespace {

constexpr int k_warps = 4, k_stages = 3;
// Keys per split at least: one split covers the whole context up to 128 keys (no partials to
// merge, which is most of a short context's attention time).
constexpr int k_min_chunk = 128;
// Keys per warp and stage: 4 KB of K and 4 KB of V (the 8-bit cache: 2 KB each, their scales, and
// one f16 tile of both per warp, which the stage being computed is widened into).
template <int HD> constexpr int keys_per_stage() { return 2048 / HD; }
template <int HD, typename KV> constexpr size_t stage_bytes() {
    return 2 * keys_per_stage<HD>() * (HD * sizeof(KV) + (sizeof(KV) == 1 ? 4 : 0));
}
template <int HD, typename KV> constexpr size_t tiles_bytes() {
    const size_t widened = sizeof(KV) == 1 ? 2 * keys_per_stage<HD>() * HD * sizeof(__half) : 0;
    return size_t(k_warps) * (k_stages * stage_bytes<HD, KV>() + widened);
}

// T: the products' 16-bit type; KV: the cache's (T, or int8_t for the 8-bit cache with T f16).
template <typename W, typename T, typename KV, bool ROPE, int HD>
__global__ void __launch_bounds__(k_warps * 32, 2) decode_attn_mma_kernel(DecodeAttnArgs a) {
    constexpr bool Q8 = sizeof(KV) == 1;
    static_assert(Q8 ? std::is_same_v<T, __half> : std::is_same_v<T, KV>);
    constexpr int BN = keys_per_stage<HD>(), CH = HD * int(sizeof(KV)) / 16;  // CH: 16-byte chunks per cache row
    extern __shared__ __align__(16) float smem[];
    const decode::Block<KV> b = decode::block_of<KV>(a, k_min_chunk);
    const int group = b.group;
    float* s_q = smem;               // [group][HD] f32
    float* s_k = s_q + group * HD;   // [HD]: the newest k while it is prepared
    float* s_v = s_k + HD;           // [HD]: the newest v in f32 (load_queries; PATCHABLE puts it into its stage)
    // [k_warps][k_stages][K | V][BN][HD] swizzled (Q8: [K | V][BN][HD] INT8 rows, then [K | V][BN]
    // scales, and after the stages each warp's widened [K | V][BN][HD] f16 tile, swizzled).
    uint8_t* tiles = reinterpret_cast<uint8_t*>(s_v + HD);
    if (b.start >= b.end) return;  // an idle split: the active ones count their arrivals among themselves
    decode::prefetch_first_rows(b, k_warps * k_stages * BN);

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t4 = lane & 3;
    // This warp's chunks of BN keys: warp, warp + k_warps, ... of the split's.
    const int n_chunks = (b.end - b.start + BN - 1) / BN;
    const int my_chunks = n_chunks > warp ? (n_chunks - warp + k_warps - 1) / k_warps : 0;
    uint8_t* ring = tiles + size_t(warp) * k_stages * stage_bytes<HD, KV>();
    T* wide = reinterpret_cast<T*>(tiles + size_t(k_warps) * k_stages * stage_bytes<HD, KV>()) + size_t(warp) * 2 * BN * HD;
    const size_t head_off = size_t(b.kvh) * HD;
    auto issue = [&](int i) {  // chunk i into stage i % k_stages; keys past the split's end are zeros
        if (i < my_chunks) {
            const int key0 = b.start + (warp + i * k_warps) * BN;
            KV* sk = reinterpret_cast<KV*>(ring + (i % k_stages) * stage_bytes<HD, KV>());
            KV* sv = sk + BN * HD;
            for (int x = lane; x < BN * CH; x += 32) {
                const int r = x / CH, c = x % CH, key = key0 + r;
                const bool ok = key < b.end;
                const size_t off = size_t(ok ? key : b.start) * b.kv_dim + head_off + c * (16 / sizeof(KV));
                // (the INT8 rows are widened out of place: stored as they come)
                const int at = Q8 ? r * HD + c * 16 : swz<HD>(r, c);
                cp_async16(smem_addr(sk + at), b.k_cache + off, ok);
                cp_async16(smem_addr(sv + at), b.v_cache + off, ok);
            }
            if constexpr (Q8) {
                float* ss = reinterpret_cast<float*>(sv + BN * HD);  // [K | V][BN]
                for (int x = lane; x < 2 * BN; x += 32) {
                    const int key = key0 + x % BN;
                    const bool ok = key < b.end;
                    const float* src = (x < BN ? b.k_scale : b.v_scale) + size_t(ok ? key : b.start) * a.n_kv_heads + b.kvh;
                    cp_async4(smem_addr(ss + x), src, ok);
                }
            }
        }
        cp_async_commit();  // (an empty group past the last chunk keeps the count of groups in step)
    };

    // EARLY: the keys before pos were written by earlier steps, so the first stages go out before
    // pdl_wait(), while the q/k/v GEMV finishes; the newest row, written by this block below,
    // comes into its stage from s_k and s_v instead of back through L2 (no fence, no round trip:
    // at a short context the whole split is in those stages). Not for a KV-shared layer: its
    // source layer wrote the newest row this step. Not for the 8-bit cache (the header says why).
    constexpr bool PATCHABLE = ROPE && !Q8;
    const bool early = PATCHABLE && a.rope.k != nullptr;
    const int newest_chunk = b.end == b.len ? (b.pos - b.start) / BN : -1;
    const bool patch = early && newest_chunk >= 0 && newest_chunk / k_warps < k_stages - 1;
    if (early)
        for (int i = 0; i < k_stages - 1; ++i) issue(i);
    // The norms' weights and RoPE's cos and sin do not depend on the previous kernel either.
    [[maybe_unused]] const HeadConsts<HD> hc =
        ROPE ? head_consts<W, HD>(static_cast<const W*>(a.rope.q_norm), static_cast<const W*>(a.rope.k_norm), a.rope.norm_offset,
                                  a.rope.inv_freq, a.rope.rotary_dim, a.rope.attention_factor, b.pos)
             : HeadConsts<HD>{};
    pdl_wait();  // q, k and v are the previous kernel's output
    pdl_launch_dependents();
    if constexpr (ROPE) decode::load_queries<W, KV, ROPE, HD>(a, b, s_q, s_k, s_v, !patch, &hc);
    else decode::load_queries<W, KV, ROPE>(a, b, s_q, s_k);

    // Q as A fragments (rows = the group's heads, zero past it), k-step kk: head_dim 16kk .. +15.
    uint32_t qf[HD / 16][4];
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int r = g + 8 * (i & 1), k = 16 * kk + 2 * t4 + 8 * (i >> 1);
            qf[kk][i] = r < group ? pack2<T>(s_q[r * HD + k], s_q[r * HD + k + 1]) : 0u;
        }

    // ldmatrix row addresses per lane (flash_attention.cu's layout notes):
    const int kb_row = (lane & 7) + ((lane >> 4) << 3), kb_chunk = (lane >> 3) & 1;  // B (K)
    const int vb_row = (lane & 7) + (((lane >> 3) & 1) << 3), vb_chunk = lane >> 4;  // B (V, .trans)
    const float scale_log2 = a.scale * k_log2e;
    // Rows g (r = 0: c0, c1) and g + 8 (r = 1: c2, c3) of the tile; log2 domain; row_sum per lane.
    float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};
    float o[HD / 8][4];
#pragma unroll
    for (int j = 0; j < HD / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;

    if (!early)
        for (int i = 0; i < k_stages - 1; ++i) issue(i);
    for (int i = 0; i < my_chunks; ++i) {
        issue(i + k_stages - 1);
        cp_async_wait<k_stages - 1>();
        __syncwarp();  // chunk i landed for every lane of the warp
        const T* kt = reinterpret_cast<const T*>(ring + (i % k_stages) * stage_bytes<HD, KV>());
        const T* vt = kt + BN * HD;
        if constexpr (PATCHABLE) {
            if (patch && warp + i * k_warps == newest_chunk) {
                // The newest row over what its early copy found in the cache: the values the cache
                // now holds (write_kv_head's conversions), 8 per 16-byte chunk.
                const int r = b.pos - (b.start + newest_chunk * BN);
                T* kw = reinterpret_cast<T*>(ring + (i % k_stages) * stage_bytes<HD, KV>());
                for (int c = lane; c < CH; c += 32) {
                    alignas(16) T k8[8], v8[8];
#pragma unroll
                    for (int j = 0; j < 8; ++j) {
                        k8[j] = from_float<T>(s_k[8 * c + j]);
                        v8[j] = from_float<T>(s_v[8 * c + j]);
                    }
                    *reinterpret_cast<uint4*>(kw + swz<HD>(r, c)) = *reinterpret_cast<const uint4*>(k8);
                    *reinterpret_cast<uint4*>(kw + BN * HD + swz<HD>(r, c)) = *reinterpret_cast<const uint4*>(v8);
                }
                __syncwarp();
            }
        }
        const float* ks = nullptr;  // Q8: the keys' and the values' scales
        if constexpr (Q8) {
            // The stage's INT8 rows into the warp's f16 tile (swizzled as the 16-bit caches' are):
            // 16 bytes in, two 16-byte chunks out.
            const int8_t* q8 = reinterpret_cast<const int8_t*>(kt);
            for (int x = lane; x < 2 * BN * CH; x += 32) {
                const int kv = x / (BN * CH), r = (x / CH) % BN, c = x % CH;
                const uint4 in = *reinterpret_cast<const uint4*>(q8 + (kv * BN + r) * HD + c * 16);
                const uint32_t w[4] = {in.x, in.y, in.z, in.w};
                uint32_t h[8];
#pragma unroll
                for (int k = 0; k < 4; ++k) widen_int8(w[k], *reinterpret_cast<uint32_t(*)[2]>(&h[2 * k]));
                __half* dst = wide + kv * BN * HD;
                *reinterpret_cast<uint4*>(dst + swz<HD>(r, 2 * c)) = make_uint4(h[0], h[1], h[2], h[3]);
                *reinterpret_cast<uint4*>(dst + swz<HD>(r, 2 * c + 1)) = make_uint4(h[4], h[5], h[6], h[7]);
            }
            ks = reinterpret_cast<const float*>(q8 + 2 * BN * HD);
            kt = wide;
            vt = wide + BN * HD;
            __syncwarp();  // the tile is widened for every lane's ldmatrix
        }
        float s[BN / 8][4];
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < HD / 16; ++kk) qk_step<T, BN, HD>(s, qf[kk], kt, kk, kb_row, kb_chunk);
        // Scale (then soft-cap, s = cap * tanh(s * scale / cap)) into the log2 domain; keys past
        // the split's end masked.
        const int key0 = b.start + (warp + i * k_warps) * BN;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const float sk = Q8 ? s[j][e] * ks[8 * j + 2 * t4 + (e & 1)] : s[j][e];  // q . (s k_q) = s (q . k_q)
                float x = a.softcap > 0 ? a.softcap * tanhf(sk * a.scale / a.softcap) * k_log2e : sk * scale_log2;
                if (key0 + 8 * j + 2 * t4 + (e & 1) >= b.end) x = -INFINITY;
                s[j][e] = x;
            }
        // Online softmax, then out += P V with P rounded to T (flash_tile.cuh, as in prefill).
        softmax_tile<BN, HD>(s, row_max, row_sum, o);
        if constexpr (Q8)  // p (s v_q) = (p s) v_q; the sum above is of p
#pragma unroll
            for (int j = 0; j < BN / 8; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) s[j][e] *= ks[BN + 8 * j + 2 * t4 + (e & 1)];
        pv_tile<T, BN, HD>(o, s, vt, vb_row, vb_chunk);
        __syncwarp();  // every lane is done with the stage before the next issue refills it
    }
    cp_async_wait_all();  // (only empty groups are left)

    // The warps' states (the group's rows) into shared memory over the tiles: output, max in
    // natural units (-inf for a warp without keys), sum over the quad's columns.
    float l[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        l[r] = row_sum[r];
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
        l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    }
    __syncthreads();  // every warp is done with its ring
    float* s_red = reinterpret_cast<float*>(tiles);  // [k_warps][16][HD + 2]
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int head = g + 8 * r;
        if (head >= group) continue;
        float* dst = s_red + (warp * 16 + head) * (HD + 2);
#pragma unroll
        for (int j = 0; j < HD / 8; ++j) {
            dst[8 * j + 2 * t4] = o[j][2 * r];
            dst[8 * j + 2 * t4 + 1] = o[j][2 * r + 1];
        }
        if (t4 == 0) {
            dst[HD] = row_max[r] * (1.0f / k_log2e);
            dst[HD + 1] = l[r];
        }
    }
    __syncthreads();
    decode::merge_warps<W, KV>(a, b, s_red, k_warps, 16, 0, group);
    decode::merge_splits<W, KV>(a, b, s_red);  // (its weights overwrite s_red after a barrier)
}

template <typename W, typename T, typename KV, bool ROPE, int HD>
void run(const DecodeAttnArgs& a, cudaStream_t s) {
    auto kernel = decode_attn_mma_kernel<W, T, KV, ROPE, HD>;
    // The tiles' space starts after s_v (HD floats), and merge_warps' states take it over later.
    static_assert(size_t(k_warps) * 16 * (HD + 2) * sizeof(float) <= tiles_bytes<HD, KV>());
    const size_t smem = decode::smem_bytes(a.n_heads / a.n_kv_heads, HD, tiles_bytes<HD, KV>() + HD * sizeof(float), k_warps, 16);
    allow_dynamic_smem(kernel, smem);
    launch(kernel, dim3(unsigned(a.n_kv_heads), unsigned(a.n_splits), unsigned(a.n_rows)), k_warps * 32, smem, s, a);
}

}  // namespace

bool decode_attention_tensor_cores(DType kv_dt, int head_dim, int group) {
    return (kv_dt == DType::bf16 || kv_dt == DType::f16 || kv_dt == DType::i8) && (head_dim == 64 || head_dim == 128) &&
           group <= decode::k_max_group;
}

namespace decode {

void launch_mma(const DecodeAttnArgs& a, cudaStream_t s) {
    // ROPE: the weights' dtype is the cache's; without, q and the output are f32.
    // The 8-bit cache: ROPE in the weights' dtype, the products in f16.
    using bf16 = __nv_bfloat16;
    if (a.kv_dt == DType::i8) {
        if (a.rope_fused)
            TT_DISPATCH_FLOAT(a.rope.wdt, W, a.head_dim == 64 ? run<W, __half, int8_t, true, 64>(a, s) : run<W, __half, int8_t, true, 128>(a, s));
        else a.head_dim == 64 ? run<float, __half, int8_t, false, 64>(a, s) : run<float, __half, int8_t, false, 128>(a, s);
    } else if (a.kv_dt == DType::bf16) {
        if (a.rope_fused) a.head_dim == 64 ? run<bf16, bf16, bf16, true, 64>(a, s) : run<bf16, bf16, bf16, true, 128>(a, s);
        else a.head_dim == 64 ? run<float, bf16, bf16, false, 64>(a, s) : run<float, bf16, bf16, false, 128>(a, s);
    } else {
        if (a.rope_fused) a.head_dim == 64 ? run<__half, __half, __half, true, 64>(a, s) : run<__half, __half, __half, true, 128>(a, s);
        else a.head_dim == 64 ? run<float, __half, __half, false, 64>(a, s) : run<float, __half, __half, false, 128>(a, s);
    }
}

}  // namespace decode

}  // namespace tt::cuda
