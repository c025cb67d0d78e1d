// Qwen3.5's gated attention: q_proj yields each head's query and an output gate side by side, and
// the attention output is multiplied by sigmoid(gate) before o_proj (transformers'
// Qwen3_5Attention). Two small element-wise kernels around the unchanged attention kernels.
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/launch.cuh"

namespace tt::cuda {

// One grid row per token, threads across the q_dim columns of the output.
__global__ void split_query_gate_kernel(const float* qg, int ld_qg, int n_heads, int head_dim, float* q, int ld_q, float* gate) {
    pdl_wait();  // in the decode step, after the q/k/v GEMV
    pdl_launch_dependents();
    const size_t t = blockIdx.y;
    const int width = n_heads * head_dim;
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < width; c += gridDim.x * blockDim.x) {
        const int h = c / head_dim, i = c - h * head_dim;
        const float* src = qg + t * size_t(ld_qg) + size_t(h) * 2 * head_dim;
        q[t * size_t(ld_q) + size_t(c)] = src[i];
        gate[t * size_t(width) + size_t(c)] = src[head_dim + i];
    }
}

static unsigned blocks_for(int64_t n) { return unsigned(std::min<int64_t>((n + 255) / 256, 65535)); }

void split_query_gate(const float* qg, int ld_qg, int n, int n_heads, int head_dim, float* q, int ld_q, float* gate,
                      cudaStream_t s) {
    if (n > 65535) fail("split_query_gate: {} rows exceed the grid's 65535", n);
    launch(split_query_gate_kernel, dim3(blocks_for(int64_t(n_heads) * head_dim), unsigned(n)), 256, 0, s, qg, ld_qg,
           n_heads, head_dim, q, ld_q, gate);
    TT_CUDA_LAUNCH_CHECK();
}

template <typename T>
__global__ void sigmoid_gate_kernel(T* x, int ld, const float* gate, int width) {
    pdl_wait();  // in the decode step, after decode attention
    pdl_launch_dependents();
    const size_t t = blockIdx.y;
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < width; c += gridDim.x * blockDim.x) {
        T& v = x[t * size_t(ld) + size_t(c)];
        const float g = gate[t * size_t(width) + size_t(c)];
        // note: as torch, x * sigmoid(g) in float, then stored in x's dtype.
        v = from_float<T>(to_float(v) * (1.0f / (1.0f + expf(-g))));
    }
}

void sigmoid_gate(void* x, DType dt, int ld, const float* gate, int n, int width, cudaStream_t s) {
    if (n > 65535) fail("sigmoid_gate: {} rows exceed the grid's 65535", n);
    const dim3 grid(blocks_for(width), unsigned(n));
    TT_DISPATCH_FLOAT(dt, T, launch(sigmoid_gate_kernel<T>, grid, 256, 0, s, static_cast<T*>(x), ld, gate, width));
    TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::cuda
