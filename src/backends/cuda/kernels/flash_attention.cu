// Prefill attention, FlashAttention-2 style: one block per (query head, tile of BM queries); the
// block walks the key tiles its queries can see (causal, sliding window), K and V tiles double
// buffered in shared memory by cp.async, scores S = Q K^T and out += P V on the tensor cores
// (mma.sync m16n8k16, f32 accumulation), and an online softmax in registers. The scores never
// leave the SM: no [heads, n_q, n_k] buffer, no second pass.
//
// Work split: warp w owns query rows 16w..16w+15 of the tile and all head_dim columns of their
// output; every warp reads the whole K/V tile (ldmatrix), so K/V cross global memory once per block.
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16", .bf16/.f16 inputs, .f32 accumulators);
// g = lane / 4 (groupID), t = lane % 4 (threadID_in_group), each .b32 register = 2 packed 16-bit values,
// the lower column/k index in the low half:
//   A 16x16 (row):  a0 = (row g,   k 2t..2t+1)  a1 = (row g+8, k 2t..2t+1)
//                   a2 = (row g,   k 2t+8..+9)  a3 = (row g+8, k 2t+8..+9)
//   B 16x8  (col):  b0 = (k 2t..2t+1,   col g)  b1 = (k 2t+8..+9, col g)
//   C/D 16x8 f32:   c0, c1 = (row g, cols 2t, 2t+1)   c2, c3 = (row g+8, cols 2t, 2t+1)
//   ldmatrix .x4:   lanes 8i..8i+7 give the row addresses of 8x8 matrix i (16 bytes per row); register
//                   i of lane l receives matrix i's (row l/4, cols 2(l%4), +1); with .trans it receives
//                   (rows 2(l%4), 2(l%4)+1 of column l/4), i.e. the matrix transposed.
// Hence: Q (rows x head_dim, row-major) -> A by plain ldmatrix; K (keys x head_dim) is B = K^T in
// "col" layout, which is K's rows as stored -> plain ldmatrix; V (keys x head_dim) is B with k = key
// -> ldmatrix .trans; the S accumulators of key blocks 2kk and 2kk+1 are exactly the A fragment of
// P for k-step kk (c0c1 -> a0, c2c3 -> a1 of block 2kk; the same of block 2kk+1 -> a2, a3), so P
// goes from the softmax to the second product without touching shared memory.
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/flash_tile.cuh"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/launch.cuh"
#include "backends/cuda/kernels/ptx.cuh"

namespace tt::cuda {

namespace {

// Tile shapes per head_dim. HD <= 128: 8 warps x 16 query rows, 64 keys per tile, Q held as A
// fragments in registers (HD/4 registers) beside the HD/2 f32 output accumulators. HD = 256 would
// need 64 + 128 registers for those alone: 4 warps, 32 keys per tile, Q re-read from shared memory.
template <int HD> struct FaCfg;
template <> struct FaCfg<64> { static constexpr int warps = 8, bn = 64, min_blocks = 2; static constexpr bool q_regs = true; };
template <> struct FaCfg<128> { static constexpr int warps = 8, bn = 64, min_blocks = 1; static constexpr bool q_regs = true; };
template <> struct FaCfg<256> { static constexpr int warps = 4, bn = 32, min_blocks = 1; static constexpr bool q_regs = false; };

template <int HD> constexpr size_t fa_smem_bytes() {
    using C = FaCfg<HD>;
    return (size_t(16 * C::warps) * HD + 4 * size_t(C::bn) * HD) * 2;  // Q tile + 2 x (K, V) tiles, 16-bit
}

template <typename T, int HD, bool SOFTCAP>
__global__ void __launch_bounds__(32 * FaCfg<HD>::warps, FaCfg<HD>::min_blocks) prefill_attn_kernel(PrefillAttnArgs a) {
    using C = FaCfg<HD>;
    constexpr int BM = 16 * C::warps, BN = C::bn, NT = 32 * C::warps, CH = HD / 8;  // CH: 16-byte chunks per row
    extern __shared__ uint4 fa_smem[];
    T* sq = reinterpret_cast<T*>(fa_smem);  // [BM][HD]; at the end each warp's 16 rows stage its output
    T* sk = sq + BM * HD;                   // [2][BN][HD]
    T* sv = sk + 2 * BN * HD;               // [2][BN][HD]

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int h = blockIdx.x;
    const int m0 = (gridDim.y - 1 - blockIdx.y) * BM;  // the last (longest) query tiles are scheduled first
    const int kvh = h / (a.n_heads / a.n_kv_heads), kv_dim = a.n_kv_heads * HD;
    const int n_keys = a.q_pos0 + a.n_q;
    const int p_first = a.q_pos0 + m0, p_last = min(p_first + BM, n_keys) - 1;  // the tile's query positions
    const int kv_begin = (a.window > 0 ? max(0, p_first - a.window + 1) : 0) / BN * BN;
    const int n_tiles = (p_last + 1 - kv_begin + BN - 1) / BN;  // >= 1: the first query sees itself

    const T* qg = static_cast<const T*>(a.q);
    const T* kg = static_cast<const T*>(a.k_cache);
    const T* vg = static_cast<const T*>(a.v_cache);
    // Query rows past n_q and key rows past n_keys are zero-filled, never read.
    for (int i = tid; i < BM * CH; i += NT) {
        const int r = i / CH, c = i % CH, row = m0 + r;
        const bool ok = row < a.n_q;
        cp_async16(smem_addr(sq + swz<HD>(r, c)), ok ? qg + size_t(row) * a.q_stride + size_t(h) * HD + c * 8 : qg, ok);
    }
    auto load_kv = [&](int tile, int buf) {
        const int n0 = kv_begin + tile * BN;
        for (int i = tid; i < BN * CH; i += NT) {
            const int r = i / CH, c = i % CH, key = n0 + r;
            const bool ok = key < n_keys;
            const size_t off = ok ? size_t(key) * kv_dim + size_t(kvh) * HD + c * 8 : 0;
            cp_async16(smem_addr(sk + buf * BN * HD + swz<HD>(r, c)), kg + off, ok);
            cp_async16(smem_addr(sv + buf * BN * HD + swz<HD>(r, c)), vg + off, ok);
        }
    };
    load_kv(0, 0);
    cp_async_commit();

    // This thread's two query rows: r = 0 -> row g of the warp's 16 (c0, c1), r = 1 -> row g + 8 (c2, c3).
    int key_lo[2], key_hi[2];  // visible keys [lo, hi] (hi < lo: none, for rows past n_q)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int pos = a.q_pos0 + m0 + warp * 16 + g + 8 * r;
        key_lo[r] = a.window > 0 ? max(0, pos - a.window + 1) : 0;
        key_hi[r] = min(pos, n_keys - 1);
    }
    const float scale_log2 = a.scale * k_log2e;
    float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};  // log2 domain; row_sum per thread (its columns)
    float o[HD / 8][4];
#pragma unroll
    for (int j = 0; j < HD / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
    uint32_t qf[C::q_regs ? HD / 16 : 1][4];

    // ldmatrix row addresses per lane (see the layout notes at the top):
    const int a_row = lane & 15, a_chunk = lane >> 4;                       // A (Q): matrices (r0-7,k0-7) (r8-15,k0-7) (r0-7,k8-15) (r8-15,k8-15)
    const int kb_row = (lane & 7) + ((lane >> 4) << 3), kb_chunk = (lane >> 3) & 1;  // B (K): (n0-7,k0-7) (n0-7,k8-15) (n8-15,k0-7) (n8-15,k8-15)
    const int vb_row = (lane & 7) + (((lane >> 3) & 1) << 3), vb_chunk = lane >> 4;  // B (V, .trans): (k0-7,n0-7) (k8-15,n0-7) (k0-7,n8-15) (k8-15,n8-15)

    for (int tile = 0; tile < n_tiles; ++tile) {
        const int buf = tile & 1, n0 = kv_begin + tile * BN;
        cp_async_wait_all();
        __syncthreads();  // tile `tile` (and Q) landed for every thread; every warp is done with buffer buf ^ 1
        if (tile + 1 < n_tiles) load_kv(tile + 1, buf ^ 1);
        cp_async_commit();
        if constexpr (C::q_regs) {
            if (tile == 0) {
#pragma unroll
                for (int kk = 0; kk < HD / 16; ++kk) ldmatrix_x4(qf[kk], smem_addr(sq + swz<HD>(warp * 16 + a_row, 2 * kk + a_chunk)));
            }
        }

        // S = Q K^T: s[j] is the 16x8 block of keys n0 + 8j .. +7.
        const T* kt = sk + buf * BN * HD;
        float s[BN / 8][4];
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < HD / 16; ++kk) {
            uint32_t qa[4];
            if constexpr (C::q_regs) {
                qa[0] = qf[kk][0]; qa[1] = qf[kk][1]; qa[2] = qf[kk][2]; qa[3] = qf[kk][3];
            } else {
                ldmatrix_x4(qa, smem_addr(sq + swz<HD>(warp * 16 + a_row, 2 * kk + a_chunk)));
            }
            qk_step<T, BN, HD>(s, qa, kt, kk, kb_row, kb_chunk);
        }

        // Scale (then soft-cap, as masked_softmax does: s = cap * tanh(s * scale / cap)), into the
        // log2 domain; masking only where the tile crosses the diagonal, the window edge or n_keys.
        // (The largest window start is the last valid query's; rows past n_q are never written.)
        const bool need_mask = n0 + BN - 1 > p_first || (a.window > 0 && n0 < p_last - a.window + 1);
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                float x;
                if constexpr (SOFTCAP) x = a.softcap * tanhf(s[j][e] * a.scale / a.softcap) * k_log2e;
                else x = s[j][e] * scale_log2;
                if (need_mask) {
                    const int key = n0 + 8 * j + 2 * t4 + (e & 1), r = e >> 1;
                    if (key < key_lo[r] || key > key_hi[r]) x = -INFINITY;
                }
                s[j][e] = x;
            }
        }

        // Online softmax, then out += P V with P rounded to T (flash_tile.cuh).
        softmax_tile<BN, HD>(s, row_max, row_sum, o);
        pv_tile<T, BN, HD>(o, s, sv + buf * BN * HD, vb_row, vb_chunk);
    }

    // Normalize, stage the warp's 16 output rows in its own (no longer needed) Q rows, then write
    // them out as 16-byte chunks, rows past n_q skipped.
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float l = row_sum[r];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        inv[r] = l > 0.0f ? 1.0f / l : 0.0f;
    }
    __syncwarp();
#pragma unroll
    for (int j = 0; j < HD / 8; ++j) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const int row = warp * 16 + g + 8 * r;
            *reinterpret_cast<uint32_t*>(sq + swz<HD>(row, j) + 2 * t4) = pack2<T>(o[j][2 * r] * inv[r], o[j][2 * r + 1] * inv[r]);
        }
    }
    __syncwarp();
    T* og = static_cast<T*>(a.out);
    for (int i = lane; i < 16 * CH; i += 32) {
        const int r = i / CH, c = i % CH, row = m0 + warp * 16 + r;
        if (row < a.n_q)
            *reinterpret_cast<uint4*>(og + size_t(row) * a.out_stride + size_t(h) * HD + c * 8) =
                *reinterpret_cast<const uint4*>(sq + swz<HD>(warp * 16 + r, c));
    }
}

template <typename T, int HD>
void launch_attention(const PrefillAttnArgs& a, cudaStream_t s) {
    constexpr int BM = 16 * FaCfg<HD>::warps;
    constexpr size_t smem = fa_smem_bytes<HD>();
    auto k = a.softcap > 0 ? prefill_attn_kernel<T, HD, true> : prefill_attn_kernel<T, HD, false>;
    allow_dynamic_smem(k, smem);
    const dim3 grid(unsigned(a.n_heads), unsigned((a.n_q + BM - 1) / BM));
    k<<<grid, 32 * FaCfg<HD>::warps, smem, s>>>(a);
}

}  // namespace

bool prefill_attention_supported(DType dt, int head_dim) {
    return flash_prefill_supported(dt, head_dim);  // the planner's predicate too
}

void prefill_attention(const PrefillAttnArgs& a, cudaStream_t s) {
    if (!prefill_attention_supported(a.dt, a.head_dim))
        fail("prefill attention: dtype {} with head_dim {} is not supported (bf16/f16, head_dim 64/128/256)",
             dtype_name(a.dt), a.head_dim);
    if (a.n_kv_heads <= 0 || a.n_heads <= 0 || a.n_heads % a.n_kv_heads != 0)
        fail("prefill attention: {} query heads do not group over {} KV heads", a.n_heads, a.n_kv_heads);
    if (a.q_pos0 < 0 || a.window < 0 || a.n_q < 0)
        fail("prefill attention: bad n_q {} / q_pos0 {} / window {}", a.n_q, a.q_pos0, a.window);
    // Rows move as 16-byte cp.async / vector chunks.
    const auto misaligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 != 0; };
    if (misaligned(a.q) || misaligned(a.k_cache) || misaligned(a.v_cache) || misaligned(a.out) || a.q_stride % 8 != 0 ||
        a.out_stride % 8 != 0 || a.q_stride < a.n_heads * a.head_dim || a.out_stride < a.n_heads * a.head_dim)
        fail("prefill attention: q/k/v/out must be 16-byte aligned with row strides >= n_heads * head_dim and a multiple of 8 "
             "(q_stride {}, out_stride {})", a.q_stride, a.out_stride);
    if (a.n_q == 0) return;
    if (a.dt == DType::bf16) {
        if (a.head_dim == 64) launch_attention<__nv_bfloat16, 64>(a, s);
        else if (a.head_dim == 128) launch_attention<__nv_bfloat16, 128>(a, s);
        else launch_attention<__nv_bfloat16, 256>(a, s);
    } else {
        if (a.head_dim == 64) launch_attention<__half, 64>(a, s);
        else if (a.head_dim == 128) launch_attention<__half, 128>(a, s);
        else launch_attention<__half, 256>(a, s);
    }
    TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::cuda
