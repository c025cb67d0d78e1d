// The doctor's self-test of the GPU: every kernel family of kernels/kernels.h on one small random
// case per dtype (f32 and bf16 weights / caches / outputs), and a small cuBLAS GEMM, each compared
// with the CPU reference operators (src/backends/cpu/ops.h) by relative error ||gpu - cpu|| / ||cpu||.
// The whole test takes well under a second. A CUDA error in one case fails that case only; the
// message names the failing call. Host-only header.
#pragma once

#include <string>
#include <vector>

namespace tt::cuda {

struct KernelCheck {
    std::string kernel;     // kernel family: "gemv", "gemv prenorm", "rope_qkv", ..., "cublas gemm"
    std::string dtype;      // "f32" or "bf16" (the weight / cache / output dtype of the case)
    double rel_err = 0;     // ||gpu - cpu|| / ||cpu||; +inf when the output was not finite
    double tolerance = 0;
    bool passed = false;
    std::string error;      // the CUDA error that stopped the case, if any
};

// Runs every kernel family on `device`, in a fixed order.
std::vector<KernelCheck> self_test_kernels(int device);
// cuBLAS GEMM y[n, rows] = x[n, cols] W^T as the CUDA backend's prefill issues it, f32 and bf16.
std::vector<KernelCheck> self_test_cublas(int device);

}  // namespace tt::cuda
