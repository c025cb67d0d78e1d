// The explicit dtype dispatch table: a runtime DType picks the template instantiation.
#pragma once

#include "backends/cuda/cuda_check.h"
#include "core/dtype.h"
#include "backends/cuda/kernels/common.cuh"

#define TT_DISPATCH_FLOAT(dt, T, ...)                                                     \
    do {                                                                                  \
        switch (dt) {                                                                     \
        case ::tt::DType::f32: { using T = float; __VA_ARGS__; break; }                   \
        case ::tt::DType::f16: { using T = __half; __VA_ARGS__; break; }                  \
        case ::tt::DType::bf16: { using T = __nv_bfloat16; __VA_ARGS__; break; }          \
        default: ::tt::fail("CUDA kernels: unsupported dtype {}", ::tt::dtype_name(dt));  \
        }                                                                                 \
    } while (0)

namespace tt::cuda {

// Launches kernel<<<grid, block, smem, s>>>(args...) with programmatic stream serialization, so
// the kernel may begin (up to its pdl_wait()) while the previous kernel in the stream finishes.
template <typename... KArgs, typename... Args>
void launch_pdl(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, Args&&... args) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    TT_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace tt::cuda
