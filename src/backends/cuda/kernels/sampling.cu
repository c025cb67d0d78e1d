// Token choice on the GPU: only the chosen id travels back to the host.
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/kernels.h"

namespace tt::cuda {

// (value, index) pairs reduce to the larger value, the lower index among equals.
__device__ __forceinline__ void better(float& best, int& idx, float v, int i) {
    if (v > best || (v == best && i < idx)) {
        best = v;
        idx = i;
    }
}

// Scratch for the per-block pairs: static device memory, so no allocation happens while the decode
// step is being captured into a graph. note: one argmax at a time per device (one decode stream).
__device__ float g_argmax_v[128];
__device__ int g_argmax_i[128];

// Pass 1: each block reduces a strided share of x to one (value, index) pair.
__global__ void argmax_partial_kernel(const float* x, int n, float* part_v, int* part_i) {
    __shared__ float s_v[32];
    __shared__ int s_i[32];
    float best = -INFINITY;
    int idx = 0x7fffffff;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) better(best, idx, x[i], i);
    for (int o = 16; o > 0; o >>= 1) better(best, idx, __shfl_xor_sync(0xffffffffu, best, o), __shfl_xor_sync(0xffffffffu, idx, o));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        s_v[warp] = best;
        s_i[warp] = idx;
    }
    __syncthreads();
    if (warp == 0) {
        best = lane < int(blockDim.x >> 5) ? s_v[lane] : -INFINITY;
        idx = lane < int(blockDim.x >> 5) ? s_i[lane] : 0x7fffffff;
        for (int o = 16; o > 0; o >>= 1) better(best, idx, __shfl_xor_sync(0xffffffffu, best, o), __shfl_xor_sync(0xffffffffu, idx, o));
        if (lane == 0) {
            part_v[blockIdx.x] = best;
            part_i[blockIdx.x] = idx;
        }
    }
}

// Pass 2: one warp reduces the per-block pairs.
__global__ void argmax_final_kernel(const float* part_v, const int* part_i, int n_parts, int32_t* out) {
    float best = -INFINITY;
    int idx = 0x7fffffff;
    for (int i = threadIdx.x; i < n_parts; i += 32) better(best, idx, part_v[i], part_i[i]);
    for (int o = 16; o > 0; o >>= 1) better(best, idx, __shfl_xor_sync(0xffffffffu, best, o), __shfl_xor_sync(0xffffffffu, idx, o));
    if (threadIdx.x == 0) *out = idx;
}

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
    // note: one block of 1024 threads took 50-60 us over a 150k vocabulary on the H200 (ncu); the
    // vocabulary is split over up to 128 blocks first, with the pairs in a small static scratch.
    constexpr int k_parts = 128;
    if (n < 16384) {
        argmax_kernel<<<1, 1024, 0, s>>>(x, n, out);
        TT_CUDA_LAUNCH_CHECK();
        return;
    }
    float* part_v = nullptr;
    int* part_i = nullptr;
    TT_CUDA_CHECK(cudaGetSymbolAddress(reinterpret_cast<void**>(&part_v), g_argmax_v));
    TT_CUDA_CHECK(cudaGetSymbolAddress(reinterpret_cast<void**>(&part_i), g_argmax_i));
    argmax_partial_kernel<<<k_parts, 256, 0, s>>>(x, n, part_v, part_i);
    TT_CUDA_LAUNCH_CHECK();
    argmax_final_kernel<<<1, 32, 0, s>>>(part_v, part_i, k_parts, out);
    TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::cuda
