// The weight products of a batched decode step (serve --parallel, issue #20) alone, on the
// Llama-3-8B shapes: y[n, rows] = x[n, cols] W^T in bf16 for n = 1..64 rows, as the CUDA backend
// calls cuBLAS (cublasGemmEx, default algorithm), beside the best of cuBLASLt's heuristic
// candidates for the same problem. Enough copies of each matrix that every launch reads it from
// HBM (>= 512 MiB). GB/s counts the weight bytes. Not a test of correctness: a measurement the
// benchmark notes quote. Run alone with: .carry/bin/gpu_tests --gtest_filter='CudaKernelsBench.BatchGemm*'
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernel_check.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace {

struct Shape {
    const char* name;
    int rows, cols;
};

}  // namespace

TEST(CudaKernelsBench, BatchGemmSpeed) {
    const Shape shapes[] = {{"q/k/v", 6144, 4096}, {"o", 4096, 4096}, {"gate+up", 28672, 4096}, {"down", 4096, 14336}, {"head", 128256, 4096}};
    cublasHandle_t h;
    TT_CUBLAS_CHECK(cublasCreate(&h));
    cublasLtHandle_t lt;
    TT_CUBLAS_CHECK(cublasLtCreate(&lt));
    const size_t ws_bytes = size_t(64) << 20;
    void* ws;
    TT_CUDA_CHECK(cudaMalloc(&ws, ws_bytes));
    for (const Shape& sh : shapes) {
        const size_t wbytes = size_t(sh.rows) * sh.cols * 2;
        const int copies = int(std::max<size_t>(1, (size_t(512) << 20) / wbytes + 1));
        std::vector<void*> w(static_cast<size_t>(copies));
        for (auto& p : w) {
            TT_CUDA_CHECK(cudaMalloc(&p, wbytes));
            TT_CUDA_CHECK(cudaMemset(p, 0x3c, wbytes));
        }
        void *x, *y;
        TT_CUDA_CHECK(cudaMalloc(&x, size_t(64) * sh.cols * 2));
        TT_CUDA_CHECK(cudaMemset(x, 0x3c, size_t(64) * sh.cols * 2));
        TT_CUDA_CHECK(cudaMalloc(&y, size_t(64) * sh.rows * 4));
        for (int n : {1, 2, 4, 8, 16, 32, 64}) {
            const float alpha = 1, beta = 0;
            auto time = [&](auto&& launch) {
                for (int i = 0; i < copies; ++i) launch(w[size_t(i)]);
                const int reps = std::max(20, 2 * copies);
                return 1e3 * tt::cuda::time_launches_ms(reps, [&](int i) { launch(w[size_t(i % copies)]); }) / reps;
            };
            const float us_default = time([&](void* wp) {
                TT_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, sh.rows, n, sh.cols, &alpha, wp, CUDA_R_16BF, sh.cols, x,
                                             CUDA_R_16BF, sh.cols, &beta, y, CUDA_R_32F, sh.rows, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            });
            // cuBLASLt: the same product, each heuristic candidate timed.
            cublasLtMatmulDesc_t op;
            TT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
            const cublasOperation_t t = CUBLAS_OP_T;
            TT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)));
            cublasLtMatrixLayout_t la, lb, lc;
            TT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, sh.cols, sh.rows, sh.cols));
            TT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, sh.cols, n, sh.cols));
            TT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, sh.rows, n, sh.rows));
            cublasLtMatmulPreference_t pref;
            TT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
            TT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof(ws_bytes)));
            cublasLtMatmulHeuristicResult_t res[16];
            int found = 0;
            TT_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 16, res, &found));
            float best = 1e30f;
            int best_i = -1;
            for (int i = 0; i < found; ++i) {
                const float us = time([&](void* wp) {
                    TT_CUBLAS_CHECK(cublasLtMatmul(lt, op, &alpha, wp, la, x, lb, &beta, y, lc, y, lc, &res[i].algo, ws, ws_bytes, nullptr));
                });
                if (us < best) best = us, best_i = i;
            }
            std::printf("batch gemm %-8s n=%2d: cublasGemmEx %8.1f us (%6.0f GB/s); cuBLASLt best of %2d: #%d %8.1f us (%6.0f GB/s), "
                        "heuristic #0 %s\n",
                        sh.name, n, us_default, wbytes / (us_default * 1e3), found, best_i, best, wbytes / (best * 1e3),
                        best_i == 0 ? "is the best" : "is not");
            cublasLtMatmulPreferenceDestroy(pref);
            cublasLtMatrixLayoutDestroy(la);
            cublasLtMatrixLayoutDestroy(lb);
            cublasLtMatrixLayoutDestroy(lc);
            cublasLtMatmulDescDestroy(op);
        }
        for (auto p : w) TT_CUDA_CHECK(cudaFree(p));
        TT_CUDA_CHECK(cudaFree(x));
        TT_CUDA_CHECK(cudaFree(y));
    }
    TT_CUDA_CHECK(cudaFree(ws));
    cublasLtDestroy(lt);
    cublasDestroy(h);
}
