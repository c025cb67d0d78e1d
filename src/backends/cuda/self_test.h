// The doctor's self-test of the GPU: the cases of the kernel-check table (kernel_cases.h) on one
// device, the quick ones by default (cuBLAS and every kernel family on small shapes, f32 and bf16;
// well under a second) or every case (the sweep tests/gpu runs; a few seconds). A CUDA error in
// one case fails that case only; the message names the failing call. Host-only header.
#pragma once

#include "backends/cuda/kernel_cases.h"

#include <vector>

namespace tt::cuda {

// Runs the table's quick cases (every case when `all`) on `device`, in table order.
std::vector<KernelCheck> self_test_kernels(int device, bool all);

}  // namespace tt::cuda
