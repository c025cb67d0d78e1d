// What the two flash attention kernels, prefill (flash_attention.cu) and decode
// (decode_attention_mma.cu), share: the swizzled layout of their K/V tiles, f32 pairs packed to
// 16 bits, 2^x, and one key tile's steps: S = Q K^T, the online softmax, O += P V. A warp holds
// 16 query rows in mma.m16n8k16 accumulator fragments (flash_attention.cu's layout notes): each
// lane has rows g (r = 0: elements 0, 1) and g + 8 (r = 1: elements 2, 3) of every 8-key block
// s[j], scores in the log2 domain, masked ones -inf, and the unnormalized output o[HD / 8][4] in
// the same layout over head_dim.
#pragma once

#include "backends/cuda/kernels/ptx.cuh"

namespace tt::cuda {

// Two floats rounded to T and packed, lo in the low half (the lower column of a fragment pair).
template <typename T> __device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
}
template <> __device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
}

constexpr float k_log2e = 1.4426950408889634f;

// 2^x (MUFU); ex2(-inf) = 0, which the masked scores rely on.
__device__ __forceinline__ float ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// Shared-memory offset (elements) of 16-byte chunk `chunk` of row `row` in a [rows][HD] tile. The
// chunk index is XORed with row % 8: the 8 rows one ldmatrix matrix reads (or one cp.async/uint4
// store pass writes) at the same logical chunk then fall into 8 different 16-byte bank groups
// instead of one (rows are a multiple of 128 bytes apart), so no bank conflicts.
template <int HD> __device__ __forceinline__ int swz(int row, int chunk) { return row * HD + ((chunk ^ (row & 7)) << 3); }

// One k-step of S = Q K^T over the tile: qa is the A fragment of Q's columns 16 kk .. 16 kk + 15
// (from registers or ldmatrix, the caller's choice); kt the tile's K rows, [BN][HD] swizzled (swz);
// kb_row, kb_chunk this lane's ldmatrix row and chunk. s[2 np] and s[2 np + 1] gain keys
// 16 np .. + 7 and 16 np + 8 .. + 15.
template <typename T, int BN, int HD>
__device__ __forceinline__ void qk_step(float (&s)[BN / 8][4], const uint32_t (&qa)[4], const T* kt, int kk, int kb_row,
                                        int kb_chunk) {
#pragma unroll
    for (int np = 0; np < BN / 16; ++np) {
        uint32_t b[4];
        ldmatrix_x4(b, smem_addr(kt + swz<HD>(16 * np + kb_row, 2 * kk + kb_chunk)));
        mma16816<T>(s[2 * np], qa, b[0], b[1]);
        mma16816<T>(s[2 * np + 1], qa, b[2], b[3]);
    }
}

// The online softmax over the tile: the new running max of each row (over the quad of lanes that
// shares it), the output and the sum rescaled by 2^(old - new), s replaced by p = 2^(s - max).
// row_sum is this lane's part of the row's sum (its columns); the quad adds them at the end. A row
// with nothing visible yet keeps max -inf: it subtracts 0 instead, so every p is 0.
template <int BN, int HD>
__device__ __forceinline__ void softmax_tile(float (&s)[BN / 8][4], float (&row_max)[2], float (&row_sum)[2],
                                             float (&o)[HD / 8][4]) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float mx = row_max[r];
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) mx = fmaxf(mx, fmaxf(s[j][2 * r], s[j][2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float base = mx == -INFINITY ? 0.0f : mx;
        const float alpha = ex2(row_max[r] - base);  // 0 when the old max is -inf
        row_max[r] = mx;
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            s[j][2 * r] = ex2(s[j][2 * r] - base);
            s[j][2 * r + 1] = ex2(s[j][2 * r + 1] - base);
            sum += s[j][2 * r] + s[j][2 * r + 1];
        }
        row_sum[r] = row_sum[r] * alpha + sum;
#pragma unroll
        for (int j = 0; j < HD / 8; ++j) {
            o[j][2 * r] *= alpha;
            o[j][2 * r + 1] *= alpha;
        }
    }
}

// o += P V over the tile, P (s after softmax_tile) rounded to T (the KV cache's type): the
// accumulators of key blocks 2kk and 2kk + 1 are P's A fragment for k-step kk. vt: the tile's V
// rows, [BN][HD] swizzled (swz); vb_row, vb_chunk: this lane's ldmatrix.trans row and chunk.
template <typename T, int BN, int HD>
__device__ __forceinline__ void pv_tile(float (&o)[HD / 8][4], const float (&s)[BN / 8][4], const T* vt, int vb_row,
                                        int vb_chunk) {
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
        const uint32_t pa[4] = {pack2<T>(s[2 * kk][0], s[2 * kk][1]), pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                                pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]), pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int dp = 0; dp < HD / 16; ++dp) {
            uint32_t b[4];
            ldmatrix_x4_trans(b, smem_addr(vt + swz<HD>(16 * kk + vb_row, 2 * dp + vb_chunk)));
            mma16816<T>(o[2 * dp], pa, b[0], b[1]);
            mma16816<T>(o[2 * dp + 1], pa, b[2], b[3]);
        }
    }
}

}  // namespace tt::cuda
