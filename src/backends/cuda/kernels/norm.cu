// Fused residual add + RMSNorm, one block per token row. The residual stream stays f32; the
// normalized row is written in the dtype the next consumer wants (bf16 for a cuBLAS GEMM).
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/launch.cuh"
#include "backends/cuda/kernels/norm.cuh"

namespace tt::cuda {

template <typename W, typename O>
__global__ void residual_rmsnorm_kernel(float* x, const float* add, const W* add_norm_w, const W* w, float offset,
                                        float eps, int hidden, O* out, const W* row_scale) {
    extern __shared__ float row[];  // [3, hidden]: the row, residual_row's scratch, the norm weight (with out)
    __shared__ float scratch[32];
    pdl_wait();
    pdl_launch_dependents();
    const size_t base = size_t(blockIdx.x) * hidden;
    // Gemma 4: hidden_states *= self.layer_scalar, on the whole residual stream, before the next norm
    const float scale = row_scale ? to_float(row_scale[0]) : 1.0f;
    float* wn = row + 2 * hidden;
    const float ss = residual_row(row, row + hidden, wn, x + base, add ? add + base : nullptr, add_norm_w, out ? w : nullptr,
                                  offset, offset, eps, scale, hidden, scratch);
    if (add || row_scale)
        for (int i = threadIdx.x; i < hidden; i += blockDim.x) x[base + i] = row[i];
    if (!out) return;  // residual update only (the next GEMV normalizes x itself)
    const float inv = rsqrtf(block_sum(ss, scratch) / hidden + eps);
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) out[base + i] = from_float<O>(row[i] * inv * wn[i]);
}

void residual_rmsnorm(float* x, const float* add, const void* add_norm_w, const void* w, DType wdt, float offset,
                      float eps, int n, int hidden, void* out, DType out_dt, cudaStream_t s, const void* row_scale) {
    const size_t smem = (out ? 3 : 2) * size_t(hidden) * sizeof(float);
    TT_DISPATCH_FLOAT(wdt, W, TT_DISPATCH_FLOAT(out_dt, O, {
        auto k = residual_rmsnorm_kernel<W, O>;
        allow_dynamic_smem(k, smem);
        launch(k, n, 256, smem, s, x, add, static_cast<const W*>(add_norm_w), static_cast<const W*>(w), offset, eps, hidden,
               static_cast<O*>(out), static_cast<const W*>(row_scale));
    }));
    TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::cuda
