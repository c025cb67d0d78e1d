// q/k post-processing after the prefill projections, one warp per (token, head): biases,
// Qwen3/Gemma per-head q/k RMSNorm, rotary embedding (rope.cuh), and the KV-cache write of k and v
// (with Gemma 4's v-norm).
// (Decode does the same inside its attention kernel, attention.cu.)
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/rope.cuh"

namespace tt::cuda {

constexpr int k_heads_per_block = 4;  // one warp per (token, head)

template <typename W, typename KV, typename QO>
__global__ void rope_qkv_kernel(RopeArgs a) {
    extern __shared__ float smem[];  // [k_heads_per_block][head_dim]
    const int t = blockIdx.x, hh = blockIdx.y * k_heads_per_block + (threadIdx.x >> 5);
    if (hh >= a.n_heads + (a.k ? a.n_kv_heads : 0)) return;  // a KV-shared layer: q heads only
    const bool is_q = hh < a.n_heads;
    const int head = is_q ? hh : hh - a.n_heads;
    const int hd = a.head_dim, lane = threadIdx.x & 31;
    float* hv = smem + (threadIdx.x >> 5) * hd;
    const int pos = (a.d_pos0 ? *a.d_pos0 : a.pos0) + t;
    float* src = is_q ? a.q + size_t(t) * a.q_stride + size_t(head) * hd : a.k + size_t(t) * a.k_stride + size_t(head) * hd;
    const W* bias = static_cast<const W*>(is_q ? a.bq : a.bk);
    prepare_head<W>(hv, src, bias ? bias + size_t(head) * hd : nullptr, static_cast<const W*>(is_q ? a.q_norm : a.k_norm),
                    a.norm_offset, a.norm_eps, hd, a.inv_freq, a.rotary_dim, a.attention_factor, pos);
    const int kv_dim = a.n_kv_heads * hd;
    if (is_q) {
        QO* qo = static_cast<QO*>(a.q_out);
        for (int d = lane; d < hd; d += 32) {
            src[d] = hv[d];
            if (qo) qo[size_t(t) * a.n_heads * hd + size_t(head) * hd + d] = from_float<QO>(hv[d]);
        }
    } else {
        KV* kc = static_cast<KV*>(a.k_cache) + size_t(pos) * kv_dim + size_t(head) * hd;
        KV* vc = static_cast<KV*>(a.v_cache) + size_t(pos) * kv_dim + size_t(head) * hd;
        const float* vsrc = a.v + size_t(t) * a.v_stride + size_t(head) * hd;
        const W* bv = static_cast<const W*>(a.bv);
        const size_t si = size_t(pos) * a.n_kv_heads + head;  // the 8-bit cache's row scales
        write_kv_head<W, KV>(kc, vc, hv, vsrc, bv ? bv + size_t(head) * hd : nullptr, hd, a.v_norm, a.norm_eps,
                             a.k_scale ? a.k_scale + si : nullptr, a.v_scale ? a.v_scale + si : nullptr);
    }
}

void rope_qkv(const RopeArgs& a, cudaStream_t s) {
    const int heads = a.n_heads + (a.k ? a.n_kv_heads : 0);
    const dim3 grid(unsigned(a.n), unsigned((heads + k_heads_per_block - 1) / k_heads_per_block));
    const size_t smem = size_t(k_heads_per_block) * a.head_dim * sizeof(float);
    const DType qdt = a.q_out ? a.q_out_dt : DType::f32;
    if (a.kv_dt == DType::i8) {  // the 8-bit cache (write_kv_head)
        if (a.k && (!a.k_scale || !a.v_scale)) fail("rope_qkv: the 8-bit KV cache without its row scales");
        TT_DISPATCH_FLOAT(a.wdt, W, TT_DISPATCH_FLOAT(qdt, QO,
            rope_qkv_kernel<W, int8_t, QO><<<grid, 32 * k_heads_per_block, smem, s>>>(a)));
    } else {
        TT_DISPATCH_FLOAT(a.wdt, W, TT_DISPATCH_FLOAT(a.kv_dt, KV, TT_DISPATCH_FLOAT(qdt, QO,
            rope_qkv_kernel<W, KV, QO><<<grid, 32 * k_heads_per_block, smem, s>>>(a))));
    }
    TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::cuda
