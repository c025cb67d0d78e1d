// Embedding gather: one block per token, f32 output (optionally scaled, for Gemma).
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/kernels.h"

namespace tt::cuda {

template <typename T>
__global__ void embedding_kernel(const T* embd, const int32_t* ids, int hidden, float scale, float* x) {
    const int t = blockIdx.x;
    const T* row = embd + size_t(ids[t]) * size_t(hidden);
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) x[size_t(t) * hidden + i] = to_float(row[i]) * scale;
}

void embedding(const void* embd, DType dt, const int32_t* ids, int n, int hidden, float scale, float* x, cudaStream_t s) {
    TT_DISPATCH_FLOAT(dt, T, embedding_kernel<T><<<n, 256, 0, s>>>(static_cast<const T*>(embd), ids, hidden, scale, x));
    TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::cuda
