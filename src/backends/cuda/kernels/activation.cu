// Element-wise kernels of the prefill path: gated activation (SwiGLU / GeGLU) after the gate and
// up GEMMs, bias adds after cuBLAS, and f32 -> storage dtype conversion.
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/launch.cuh"

namespace tt::cuda {

// One grid row per token, threads across the columns: no 64-bit division per element (which held
// this kernel to a third of the memory bandwidth on the H200).
template <typename G, typename W, typename O>
__global__ void gated_act_kernel(const G* g, const G* u, int ld, const W* bg, const W* bu, int f, GateAct act, O* out) {
    const size_t row = blockIdx.y;
    const G *gr = g + row * ld, *ur = u + row * ld;
    O* orow = out + row * f;
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < f; c += gridDim.x * blockDim.x) {
        const float gv = to_float(gr[c]) + (bg ? to_float(bg[c]) : 0.0f), uv = to_float(ur[c]) + (bu ? to_float(bu[c]) : 0.0f);
        orow[c] = from_float<O>((act == GateAct::silu ? silu(gv) : gelu_tanh(gv)) * uv);
    }
}

static unsigned blocks_for(int64_t n) { return unsigned(std::min<int64_t>((n + 255) / 256, 65535)); }

void gated_act(const void* g, const void* u, DType in_dt, int ld, const void* bg, const void* bu, DType wdt, int n, int f,
               GateAct act, void* out, DType out_dt, cudaStream_t s) {
    if (n > 65535) fail("gated_act: {} rows exceed the grid's 65535", n);
    const dim3 grid(blocks_for(f), unsigned(n));
    TT_DISPATCH_FLOAT(in_dt, G, TT_DISPATCH_FLOAT(wdt, W, TT_DISPATCH_FLOAT(out_dt, O,
        gated_act_kernel<G, W, O><<<grid, 256, 0, s>>>(static_cast<const G*>(g), static_cast<const G*>(u), ld,
                                                     static_cast<const W*>(bg), static_cast<const W*>(bu), f, act,
                                                     static_cast<O*>(out)))));
    TT_CUDA_LAUNCH_CHECK();
}

template <typename W>
__global__ void add_bias_kernel(float* y, const W* b, int64_t n, int rows) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        y[i] += to_float(b[i % rows]);
}

void add_bias(float* y, const void* b, DType wdt, int n, int rows, cudaStream_t s) {
    const int64_t total = int64_t(n) * rows;
    TT_DISPATCH_FLOAT(wdt, W, add_bias_kernel<W><<<blocks_for(total), 256, 0, s>>>(y, static_cast<const W*>(b), total, rows));
    TT_CUDA_LAUNCH_CHECK();
}

__global__ void softcap_kernel(float* x, int64_t n, float cap) {
    pdl_wait();  // in the decode step, after the head GEMV
    pdl_launch_dependents();
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        x[i] = cap * tanhf(x[i] / cap);
}

void softcap(float* x, int64_t n, float cap, cudaStream_t s) {
    launch(softcap_kernel, blocks_for(n), 256, 0, s, x, n, cap);
    TT_CUDA_LAUNCH_CHECK();
}

template <typename O>
__global__ void to_dtype_kernel(const float* x, int64_t n, O* out) {
    pdl_wait();
    pdl_launch_dependents();
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        out[i] = from_float<O>(x[i]);
}

void to_dtype(const float* x, int64_t n, void* out, DType dt, cudaStream_t s) {
    TT_DISPATCH_FLOAT(dt, O, launch(to_dtype_kernel<O>, blocks_for(n), 256, 0, s, x, n, static_cast<O*>(out)));
    TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::cuda
