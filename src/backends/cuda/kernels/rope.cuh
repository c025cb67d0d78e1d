// One attention head's q or k vector prepared by one warp: bias, per-head RMSNorm (Qwen3, Gemma 3),
// then RoPE in transformers' rotate_half layout. Shared by the prefill kernel (rope.cu) and the
// fused decode attention (attention.cu), so the two paths round identically. One warp per head
// lets a block prepare several heads at once: the decode attention's latency is a chain of such
// steps, and doing the heads one after another with block-wide reductions cost ~10 us per layer.
#pragma once

#include "backends/cuda/kernels/common.cuh"

namespace tt::cuda {

// Called by all 32 lanes of a warp. hv: [hd] shared memory, written here (visible to the warp on
// return); src: the projection output (f32); bias/norm: [hd] slices in the weight dtype or null.
template <typename W>
__device__ void prepare_head(float* hv, const float* src, const W* bias, const W* norm, float norm_offset, float eps,
                             int hd, const float* inv_freq, int rotary_dim, float attention_factor, int pos) {
    const int lane = threadIdx.x & 31;
    float ss = 0;
    for (int d = lane; d < hd; d += 32) {
        const float v = src[d] + (bias ? to_float(bias[d]) : 0.0f);
        hv[d] = v;
        ss += v * v;
    }
    if (norm) {
        const float inv = rsqrtf(warp_sum(ss) / hd + eps);
        for (int d = lane; d < hd; d += 32) hv[d] = hv[d] * inv * (to_float(norm[d]) + norm_offset);
    }
    __syncwarp();
    const int half = rotary_dim / 2;
    for (int i = lane; i < half; i += 32) {
        float sn, cs;
        sincosf(float(pos) * inv_freq[i], &sn, &cs);
        cs *= attention_factor;
        sn *= attention_factor;
        const float x1 = hv[i], x2 = hv[i + half];
        hv[i] = x1 * cs - x2 * sn;
        hv[i + half] = x2 * cs + x1 * sn;
    }
    __syncwarp();
}

// One KV head's cache rows at one position, written by one warp: k from the prepared head hk
// (shared memory), v = vsrc (+ bias), through Gemma 4's unweighted RMSNorm when v_norm.
template <typename W, typename KV>
__device__ void write_kv_head(KV* kc, KV* vc, const float* hk, const float* vsrc, const W* bv, int hd, bool v_norm, float eps) {
    const int lane = threadIdx.x & 31;
    float inv = 1.0f;
    if (v_norm) {
        float ss = 0;
        for (int d = lane; d < hd; d += 32) {
            const float v = vsrc[d] + (bv ? to_float(bv[d]) : 0.0f);
            ss += v * v;
        }
        inv = rsqrtf(warp_sum(ss) / hd + eps);
    }
    for (int d = lane; d < hd; d += 32) {
        kc[d] = from_float<KV>(hk[d]);
        const float v = vsrc[d] + (bv ? to_float(bv[d]) : 0.0f);
        vc[d] = from_float<KV>(v_norm ? v * inv : v);
    }
}

}  // namespace tt::cuda
