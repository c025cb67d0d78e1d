// Token choice on the GPU: only the chosen id travels back to the host.
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/kernels.h"

namespace tt::cuda {

__global__ void argmax_kernel(const float* x, int n, int32_t* out) {
    __shared__ float s_v[32];
    __shared__ int s_i[32];
    float best = -INFINITY;
    int idx = 0x7fffffff;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = x[i];
        if (v > best) {  // strided scan: the first (lowest) index of a tie wins within a thread
            best = v;
            idx = i;
        }
    }
    // Reduce (value, index): larger value wins, the lower index among equals.
    for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, best, o);
        const int oi = __shfl_xor_sync(0xffffffffu, idx, o);
        if (ov > best || (ov == best && oi < idx)) {
            best = ov;
            idx = oi;
        }
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        s_v[warp] = best;
        s_i[warp] = idx;
    }
    __syncthreads();
    if (warp == 0) {
        const int n_warps = blockDim.x >> 5;
        best = lane < n_warps ? s_v[lane] : -INFINITY;
        idx = lane < n_warps ? s_i[lane] : 0x7fffffff;
        for (int o = 16; o > 0; o >>= 1) {
            const float ov = __shfl_xor_sync(0xffffffffu, best, o);
            const int oi = __shfl_xor_sync(0xffffffffu, idx, o);
            if (ov > best || (ov == best && oi < idx)) {
                best = ov;
                idx = oi;
            }
        }
        if (lane == 0) *out = idx;
    }
}

void argmax(const float* x, int n, int32_t* out, cudaStream_t s) {
    argmax_kernel<<<1, 1024, 0, s>>>(x, n, out);
    TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::cuda
