// Token choice on the GPU: only the chosen id travels back to the host.
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/launch.cuh"

namespace tt::cuda {

namespace {

constexpr int k_parts = 128;  // blocks of the argmax: enough to stream a 150k vocabulary in parallel
constexpr int k_threads = 256;

// (value, index) pairs reduce to the larger value, the lower index among equals.
__device__ __forceinline__ void better(float& best, int& idx, float v, int i) {
    if (v > best || (v == best && i < idx)) {
        best = v;
        idx = i;
    }
}

// Reduces the block's pairs; thread 0 gets the result.
__device__ void block_better(float& best, int& idx) {
    __shared__ float s_v[32];
    __shared__ int s_i[32];
    for (int o = 16; o > 0; o >>= 1) better(best, idx, __shfl_xor_sync(0xffffffffu, best, o), __shfl_xor_sync(0xffffffffu, idx, o));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) {
        s_v[warp] = best;
        s_i[warp] = idx;
    }
    __syncthreads();
    if (warp == 0) {
        best = lane < int(blockDim.x >> 5) ? s_v[lane] : -INFINITY;
        idx = lane < int(blockDim.x >> 5) ? s_i[lane] : 0x7fffffff;
        for (int o = 16; o > 0; o >>= 1) better(best, idx, __shfl_xor_sync(0xffffffffu, best, o), __shfl_xor_sync(0xffffffffu, idx, o));
    }
}

// Per-block pairs and the arrival count: static device memory, so no allocation happens while the
// decode step is being captured into a graph. note: one argmax at a time per device (one decode stream).
__device__ float g_part_v[k_parts];
__device__ int g_part_i[k_parts];
__device__ unsigned g_arrivals;

// Each block reduces a strided share of x to one pair; the last block to arrive reduces the pairs
// (one launch: the step that ends every decoded token should not cost two).
__global__ void __launch_bounds__(k_threads) argmax_kernel(const float* x, int n, int32_t* out) {
    pdl_wait();
    pdl_launch_dependents();
    float best = -INFINITY;
    int idx = 0x7fffffff;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) better(best, idx, x[i], i);
    block_better(best, idx);
    __shared__ bool s_last;
    if (threadIdx.x == 0) {
        g_part_v[blockIdx.x] = best;
        g_part_i[blockIdx.x] = idx;
        __threadfence();
        s_last = atomicAdd(&g_arrivals, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!s_last) return;
    best = -INFINITY;
    idx = 0x7fffffff;
    for (int i = threadIdx.x; i < int(gridDim.x); i += blockDim.x) better(best, idx, __ldcg(&g_part_v[i]), __ldcg(&g_part_i[i]));
    block_better(best, idx);
    if (threadIdx.x == 0) {
        *out = idx == 0x7fffffff ? 0 : idx;  // (all NaN: 0, as Sampler::argmax)
        g_arrivals = 0;
    }
}

// One block per row: a batched step has a row for many SMs at once, so no cross-block merge is needed.
__global__ void __launch_bounds__(1024) argmax_rows_kernel(const float* x, int n, int32_t* out) {
    const float* row = x + size_t(blockIdx.x) * size_t(n);
    float best = -INFINITY;
    int idx = 0x7fffffff;
    for (int i = threadIdx.x; i < n; i += blockDim.x) better(best, idx, row[i], i);
    block_better(best, idx);
    if (threadIdx.x == 0) out[blockIdx.x] = idx == 0x7fffffff ? 0 : idx;  // (a row of NaNs: 0, as Sampler::argmax)
}

}  // namespace

void argmax_rows(const float* x, int rows, int n, int32_t* out, cudaStream_t s) {
    argmax_rows_kernel<<<rows, 1024, 0, s>>>(x, n, out);
    TT_CUDA_LAUNCH_CHECK();
}

void argmax(const float* x, int n, int32_t* out, cudaStream_t s) {
    // note: one block of 1024 threads took 50-60 us over a 150k vocabulary on the H200 (ncu).
    const int blocks = std::max(1, std::min(k_parts, (n + 4 * k_threads - 1) / (4 * k_threads)));
    launch(argmax_kernel, blocks, k_threads, 0, s, x, n, out);
    TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::cuda
