// The residual-stream update of one row, shared by the residual_rmsnorm kernel (norm.cu) and the
// decode GEMVs that take Gemma's post-norm deferred into their prologue (gemv.cuh, load_x_pending).
#pragma once

#include "backends/cuda/kernels/common.cuh"

#include <cstdint>

namespace tt::cuda {

// row = (x + rmsnorm(add) * (add_norm_w + offset)) * scale, in shared memory: Gemma's sandwich
// post-norm joining the residual (add_norm_w null: a plain add; add null: x alone). With next_w,
// also wn = next_w + next_offset (the norm that follows, for the caller's last pass). row, tmp and
// wn hold `hidden` floats each. Returns this thread's part of sum(row^2).
// Every global load is issued in the first pass, before the reduction (16-byte loads of x and add
// when aligned: hidden 1536 is then one step per thread of a 512-thread block), so a row costs one
// memory round trip; x and add go through L2 (the previous kernel's output, or x rewritten in place
// by the caller), the weights through the read-only path. The second pass's elements of a thread
// are the ones it reads back in any later pass with the same stride (i = threadIdx.x + k *
// blockDim.x), so that pass needs no barrier of its own (wn, staged with the first pass's stride,
// does: the caller's reduction).
template <typename W>
__device__ float residual_row(float* row, float* tmp, float* wn, const float* x, const float* add, const W* add_norm_w,
                              const W* next_w, float offset, float next_offset, float eps, float scale, int hidden,
                              float* scratch) {
    const bool post = add && add_norm_w;
    float ss = 0;  // of add
    auto stage = [&](int i, float xv, float a) {
        row[i] = xv;
        tmp[i] = post ? a * (to_float(__ldg(add_norm_w + i)) + offset) : a;
        if (next_w) wn[i] = to_float(__ldg(next_w + i)) + next_offset;
        ss += a * a;
    };
    if ((hidden & 3) == 0 && ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(add)) & 15) == 0) {
        for (int i = threadIdx.x; i < hidden / 4; i += blockDim.x) {
            const float4 xv = __ldcg(reinterpret_cast<const float4*>(x) + i);
            const float4 av = add ? __ldcg(reinterpret_cast<const float4*>(add) + i) : make_float4(0, 0, 0, 0);
            stage(4 * i, xv.x, av.x);
            stage(4 * i + 1, xv.y, av.y);
            stage(4 * i + 2, xv.z, av.z);
            stage(4 * i + 3, xv.w, av.w);
        }
    } else {
        for (int i = threadIdx.x; i < hidden; i += blockDim.x) stage(i, __ldcg(x + i), add ? __ldcg(add + i) : 0.0f);
    }
    // The post-norm's factor is one scalar, so it is applied after the block's reduction. Its
    // barrier (or this one) also orders the first pass's 16-byte stride before the second's.
    float inv = 1.0f;
    if (post) inv = rsqrtf(block_sum(ss, scratch) / hidden + eps);
    else __syncthreads();
    float ss_row = 0;
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
        const float v = (row[i] + tmp[i] * inv) * scale;
        row[i] = v;
        ss_row += v * v;
    }
    return ss_row;
}

}  // namespace tt::cuda
