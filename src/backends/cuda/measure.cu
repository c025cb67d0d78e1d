#include "backends/cuda/measure.h"

#include "backends/cuda/cuda_check.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

namespace tt::cuda {

namespace {

// Median milliseconds of `reps` timed runs of fn after two warm-ups.
double median_ms(const std::function<void()>& fn, int reps = 10) {
    cudaEvent_t a, b;
    TT_CUDA_CHECK(cudaEventCreate(&a));
    TT_CUDA_CHECK(cudaEventCreate(&b));
    for (int i = 0; i < 2; ++i) fn();
    std::vector<float> ms;
    for (int i = 0; i < reps; ++i) {
        TT_CUDA_CHECK(cudaEventRecord(a));
        fn();
        TT_CUDA_CHECK(cudaEventRecord(b));
        TT_CUDA_CHECK(cudaEventSynchronize(b));
        float t = 0;
        TT_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
        ms.push_back(t);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

__global__ void fill_random_bf16(__nv_bfloat16* p, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
        unsigned x = unsigned(i) * 2654435761u ^ seed;
        x ^= x >> 13;
        x *= 0x5bd1e995u;
        x ^= x >> 15;
        p[i] = __float2bfloat16(float(x & 0xffff) / 32768.0f - 1.0f);
    }
}

struct Dev {
    void* p = nullptr;
    explicit Dev(size_t n) { TT_CUDA_CHECK(cudaMalloc(&p, n)); }
    ~Dev() { cudaFree(p); }
};

}  // namespace

double measure_d2d_gbs(int device, size_t bytes) {
    TT_CUDA_CHECK(cudaSetDevice(device));
    Dev a(bytes), b(bytes);
    fill_random_bf16<<<1024, 256>>>(static_cast<__nv_bfloat16*>(a.p), bytes / 2, 1);
    TT_CUDA_LAUNCH_CHECK();
    const double ms = median_ms([&] { TT_CUDA_CHECK(cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice)); });
    return 2.0 * double(bytes) / (ms * 1e-3) / 1e9;
}

PeerCopy measure_peer(int from, int to, size_t bytes) {
    PeerCopy r;
    int can = 0;
    TT_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, from, to));
    r.p2p = can != 0;
    if (r.p2p) {
        TT_CUDA_CHECK(cudaSetDevice(from));
        const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) TT_CUDA_CHECK(e);
        (void)cudaGetLastError();
    }
    TT_CUDA_CHECK(cudaSetDevice(to));
    Dev dst(bytes);
    TT_CUDA_CHECK(cudaSetDevice(from));
    Dev src(bytes);
    fill_random_bf16<<<1024, 256>>>(static_cast<__nv_bfloat16*>(src.p), bytes / 2, 3);
    TT_CUDA_LAUNCH_CHECK();
    TT_CUDA_CHECK(cudaDeviceSynchronize());
    // Timed on `from`'s default stream (the events are `from`'s).
    const double ms = median_ms([&] { TT_CUDA_CHECK(cudaMemcpyPeerAsync(dst.p, to, src.p, from, bytes)); }, 5);
    r.gbs = double(bytes) / (ms * 1e-3) / 1e9;
    r.latency_us = 1e3 * median_ms([&] { TT_CUDA_CHECK(cudaMemcpyPeerAsync(dst.p, to, src.p, from, size_t(16) << 10)); }, 20);
    return r;
}

double measure_h2d_gbs(int device, bool pinned, size_t bytes) {
    TT_CUDA_CHECK(cudaSetDevice(device));
    Dev d(bytes);
    void* h = nullptr;
    if (pinned) TT_CUDA_CHECK(cudaHostAlloc(&h, bytes, cudaHostAllocDefault));
    else h = std::malloc(bytes);
    if (!h) fail("cannot allocate {} bytes of host memory", bytes);
    std::memset(h, 0x5a, bytes);
    const double ms = median_ms([&] { TT_CUDA_CHECK(cudaMemcpyAsync(d.p, h, bytes, cudaMemcpyHostToDevice)); }, 5);
    if (pinned) cudaFreeHost(h);
    else std::free(h);
    return double(bytes) / (ms * 1e-3) / 1e9;
}

double measure_d2h_gbs(int device, size_t bytes) {
    TT_CUDA_CHECK(cudaSetDevice(device));
    Dev d(bytes);
    void* h = nullptr;
    TT_CUDA_CHECK(cudaHostAlloc(&h, bytes, cudaHostAllocDefault));
    const double ms = median_ms([&] { TT_CUDA_CHECK(cudaMemcpyAsync(h, d.p, bytes, cudaMemcpyDeviceToHost)); }, 5);
    cudaFreeHost(h);
    return double(bytes) / (ms * 1e-3) / 1e9;
}

double measure_gemm_tflops(int device, int n) {
    TT_CUDA_CHECK(cudaSetDevice(device));
    const size_t elems = size_t(n) * size_t(n);
    Dev a(elems * 2), b(elems * 2), c(elems * 2);
    fill_random_bf16<<<1024, 256>>>(static_cast<__nv_bfloat16*>(a.p), elems, 7);
    fill_random_bf16<<<1024, 256>>>(static_cast<__nv_bfloat16*>(b.p), elems, 11);
    TT_CUDA_LAUNCH_CHECK();
    cublasHandle_t h;
    TT_CUBLAS_CHECK(cublasCreate(&h));
    const float alpha = 1.0f, beta = 0.0f;
    const double ms = median_ms([&] {
        TT_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.p, CUDA_R_16BF, n, b.p, CUDA_R_16BF,
                                     n, &beta, c.p, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
    cublasDestroy(h);
    return 2.0 * double(n) * n * n / (ms * 1e-3) / 1e12;
}

}  // namespace tt::cuda
