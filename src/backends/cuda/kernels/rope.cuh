// One attention head's q or k vector prepared in shared memory: bias, per-head RMSNorm (Qwen3,
// Gemma 3), then RoPE in transformers' rotate_half layout. Shared by the prefill kernel (rope.cu)
// and the fused decode attention (attention.cu), so the two paths round identically.
#pragma once

#include "backends/cuda/kernels/common.cuh"

namespace tt::cuda {

// All threads of the block call this. hv: [hd] shared memory, written here; src: the projection
// output (f32); bias/norm: [hd] slices in the weight dtype or null; scratch: 32 floats of shared memory.
template <typename W>
__device__ void prepare_head(float* hv, const float* src, const W* bias, const W* norm, float norm_offset, float eps,
                             int hd, const float* inv_freq, int rotary_dim, float attention_factor, int pos, float* scratch) {
    float ss = 0;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        const float v = src[d] + (bias ? to_float(bias[d]) : 0.0f);
        hv[d] = v;
        ss += v * v;
    }
    if (norm) {
        const float inv = rsqrtf(block_sum(ss, scratch) / hd + eps);
        for (int d = threadIdx.x; d < hd; d += blockDim.x) hv[d] = hv[d] * inv * (to_float(norm[d]) + norm_offset);
    }
    __syncthreads();
    const int half = rotary_dim / 2;
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float sn, cs;
        sincosf(float(pos) * inv_freq[i], &sn, &cs);
        cs *= attention_factor;
        sn *= attention_factor;
        const float x1 = hv[i], x2 = hv[i + half];
        hv[i] = x1 * cs - x2 * sn;
        hv[i + half] = x2 * cs + x1 * sn;
    }
    __syncthreads();
}

}  // namespace tt::cuda
