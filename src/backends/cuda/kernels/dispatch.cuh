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
