// One table of kernel checks: op x shape x dtype x tolerance, each case a CUDA kernel family (or
// the cuBLAS GEMM the prefill issues) against the CPU reference operators (src/backends/cpu/ops.h)
// on random inputs, by relative error ||gpu - cpu|| / ||cpu||. Both harnesses iterate this table,
// as llama.cpp's test-backend-ops does: `thintensor doctor` runs the quick cases (a fraction of
// a second; --all-kernels runs every case) through self_test.h, and tests/gpu/test_kernels.cpp
// runs every case as one gtest case each. Host-only header.
#pragma once

#include "core/dtype.h"

#include <functional>
#include <random>
#include <string>
#include <vector>

namespace tt {
class ThreadPool;
}

namespace tt::cuda {

// One output of a case: what it is, its relative error and the tolerance it must meet
// (err <= tol; NaN and inf never do). Index answers (argmax) measure 0 or 1 against 0.
struct Measured {
    std::string what;  // "y", "k cache", "silu", ...
    double err = 0, tol = 0;
};

// What a case body gets: its own generator (seeded from the case's name, so a filtered run sees
// the same inputs), a thread pool for the CPU reference and the GPU's SM count.
struct CaseEnv {
    std::mt19937& rng;
    ThreadPool& pool;
    int n_sms;
};

struct KernelCase {
    std::string op;     // kernel family: "gemv", "gemv prenorm", "rope_qkv", ..., "cublas gemm"
    DType dtype;        // the weight / cache / output dtype the case is about
    std::string shape;  // the shape and options, for messages: "rows 257 cols 200, bias"
    bool quick;         // part of the doctor's self-test
    std::function<std::vector<Measured>(CaseEnv&)> run;
};

// The table, in a fixed order (cuBLAS first, then the kernel families of kernels/kernels.h).
const std::vector<KernelCase>& kernel_cases();
// A name unique in the table, letters, digits and '_' only: "gemv_prenorm_bf16_12".
std::string kernel_case_id(size_t index);

// The outcome of one case.
struct KernelCheck {
    std::string kernel;            // the case's op
    std::string dtype;             // dtype_name of the case's dtype
    std::string shape;
    std::vector<Measured> outputs;
    double rel_err = 0;            // of the output farthest over (or nearest to) its tolerance; +inf when not finite
    double tolerance = 0;          // that output's tolerance
    bool passed = false;           // every output within its tolerance, and no error
    std::string error;             // the CUDA error that stopped the case, if any
};

// Runs one case on `device`; a CUDA error (tt::Error) fails that case only, naming the call.
KernelCheck run_kernel_case(const KernelCase& c, int device);

}  // namespace tt::cuda
