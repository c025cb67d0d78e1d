// Host helpers for checking CUDA kernels against the CPU reference, used by the kernel-check table
// (kernel_cases.cpp, which the doctor and tests/gpu both run) and the GPU benchmarks: inputs rounded
// to a dtype so both sides read identical values, a poisoned device buffer, and the relative error.
#pragma once

#include "backends/cuda/cuda_check.h"
#include "core/dtype.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace tt::cuda {

// Milliseconds stream s (default: the legacy default stream) takes for launch(0) .. launch(reps - 1),
// timed by events around them (the speed benchmarks of tests/gpu).
template <typename F>
float time_launches_ms(int reps, F&& launch, cudaStream_t s = nullptr) {
    cudaEvent_t e0, e1;
    TT_CUDA_CHECK(cudaEventCreate(&e0));
    TT_CUDA_CHECK(cudaEventCreate(&e1));
    TT_CUDA_CHECK(cudaEventRecord(e0, s));
    for (int i = 0; i < reps; ++i) launch(i);
    TT_CUDA_CHECK(cudaEventRecord(e1, s));
    TT_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    TT_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    TT_CUDA_CHECK(cudaEventDestroy(e0));
    TT_CUDA_CHECK(cudaEventDestroy(e1));
    return ms;
}

// Rounds v to dtype in place (so CPU and GPU see identical values) and returns the stored bytes.
inline std::vector<uint8_t> store(std::vector<float>& v, DType dt) {
    std::vector<uint8_t> b(v.size() * dtype_size(dt));
    convert_floats(v.data(), DType::f32, b.data(), dt, v.size());
    to_f32(b.data(), dt, v.data(), v.size());
    return b;
}

// A device buffer, poisoned with 0xff bytes (NaN in every float dtype) so that an output the kernel
// never wrote shows up as a non-finite value.
struct Dev {
    void* p = nullptr;
    explicit Dev(size_t n) {
        n = std::max<size_t>(n, 4);
        TT_CUDA_CHECK(cudaMalloc(&p, n));
        TT_CUDA_CHECK(cudaMemset(p, 0xff, n));
    }
    template <typename T>
    explicit Dev(const std::vector<T>& v) : Dev(v.size() * sizeof(T)) {
        TT_CUDA_CHECK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    }
    ~Dev() { cudaFree(p); }
    Dev(const Dev&) = delete;
    Dev& operator=(const Dev&) = delete;
    template <typename T>
    T* as() { return static_cast<T*>(p); }
    // n elements of T (after all work on the device finished).
    template <typename T = float>
    std::vector<T> get(size_t n) {
        TT_CUDA_CHECK(cudaDeviceSynchronize());
        std::vector<T> v(n);
        TT_CUDA_CHECK(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
        return v;
    }
    // n elements of dtype dt, widened to f32.
    std::vector<float> get(size_t n, DType dt) {
        const auto b = get<uint8_t>(n * dtype_size(dt));
        std::vector<float> f(n);
        to_f32(b.data(), dt, f.data(), n);
        return f;
    }
};

// ||got - ref|| / ||ref||; infinity when the sizes differ or an output is not finite (which also
// catches outputs left unwritten in a poisoned buffer).
inline double rel_err(const std::vector<float>& got, const std::vector<float>& ref) {
    if (got.size() != ref.size()) return INFINITY;
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        if (!std::isfinite(got[i])) return INFINITY;
        num += double(got[i] - ref[i]) * (got[i] - ref[i]);
        den += double(ref[i]) * ref[i];
    }
    return std::sqrt(num / std::max(den, 1e-30));
}

}  // namespace tt::cuda
