// Check macros for every CUDA runtime and cuBLAS call: a failure throws tt::Error naming the
// statement, file and line (out-of-memory is bad input: a model too big for the device).
#pragma once

#include "core/error.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#define TT_CUDA_CHECK(stmt)                                                                                   \
    do {                                                                                                      \
        const cudaError_t tt_err_ = (stmt);                                                                   \
        if (tt_err_ != cudaSuccess)                                                                           \
            ::tt::fail("CUDA error {} ({}) in `{}` at {}:{}", cudaGetErrorName(tt_err_), cudaGetErrorString(tt_err_), \
                       #stmt, __FILE__, __LINE__);                                                            \
    } while (0)

#define TT_CUBLAS_CHECK(stmt)                                                                                 \
    do {                                                                                                      \
        const cublasStatus_t tt_st_ = (stmt);                                                                 \
        if (tt_st_ != CUBLAS_STATUS_SUCCESS)                                                                  \
            ::tt::fail("cuBLAS error {} in `{}` at {}:{}", cublasGetStatusName(tt_st_), #stmt, __FILE__, __LINE__); \
    } while (0)

// After a kernel launch: catches bad launch configurations immediately.
#define TT_CUDA_LAUNCH_CHECK() TT_CUDA_CHECK(cudaGetLastError())
