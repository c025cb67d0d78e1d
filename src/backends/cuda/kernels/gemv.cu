// Decode GEMV: y = W x for one token, the step that bounds batch-1 decoding. Each warp owns one
// output row and streams it with 16-byte loads, several in flight per lane; x (f32) sits in shared
// memory, RMS-normalized on the way in when the pre-norm is fused. One launch can cover several
// matrices that share x (q, k and v), so small projections still fill the GPU.
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/kernels.h"

#include <cstdlib>

namespace tt::cuda {

namespace {

constexpr int k_warps = 8;  // rows per block

// Loads x into shared memory as f32, optionally RMS-normalized with norm_w (+ offset).
template <typename W>
__device__ void load_x(float* s_x, const float* x, int cols, const W* norm_w, float offset, float eps) {
    __shared__ float scratch[32];
    float ss = 0;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
        const float v = x[i];
        s_x[i] = v;
        ss += v * v;
    }
    if (norm_w) {
        const float inv = rsqrtf(block_sum(ss, scratch) / cols + eps);
        for (int i = threadIdx.x; i < cols; i += blockDim.x) s_x[i] = s_x[i] * inv * (to_float(norm_w[i]) + offset);
    }
    __syncthreads();
}

template <typename W>
__device__ __forceinline__ float dot16(const int4& v, const float* xs) {
    constexpr int vec = 16 / sizeof(W);
    const W* e = reinterpret_cast<const W*>(&v);
    // x in 16-byte pieces (shared or global memory; 16-byte aligned at every vector boundary).
    float xv[vec];
#pragma unroll
    for (int j = 0; j < vec; j += 4) *reinterpret_cast<float4*>(&xv[j]) = *reinterpret_cast<const float4*>(xs + j);
    float acc = 0;
#pragma unroll
    for (int j = 0; j < vec; ++j) acc += to_float(e[j]) * xv[j];
    return acc;
}

// Dot products of R weight rows (gate and up: R = 2) with s_x, by one warp, UNROLL 16-byte loads
// per row in flight per lane; the loads of all rows are issued before any is used.
template <typename W, bool VECTOR, int UNROLL, int R>
__device__ void rows_dot(const W* const (&w)[R], const float* s_x, int cols, float (&out)[R]) {
    const int lane = threadIdx.x & 31;
    float acc[R] = {};
    if constexpr (VECTOR) {
        constexpr int vec = 16 / sizeof(W);
        const int n4 = cols / vec;
        int i = lane;
        for (; i + 32 * (UNROLL - 1) < n4; i += 32 * UNROLL) {
            int4 v[R][UNROLL];
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) v[r][u] = __ldg(reinterpret_cast<const int4*>(w[r]) + i + 32 * u);
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) acc[r] += dot16<W>(v[r][u], s_x + (i + 32 * u) * vec);
        }
        for (; i < n4; i += 32)
#pragma unroll
            for (int r = 0; r < R; ++r) acc[r] += dot16<W>(__ldg(reinterpret_cast<const int4*>(w[r]) + i), s_x + i * vec);
    } else {
        for (int c = lane; c < cols; c += 32)
#pragma unroll
            for (int r = 0; r < R; ++r) acc[r] += to_float(w[r][c]) * s_x[c];
    }
#pragma unroll
    for (int r = 0; r < R; ++r) out[r] = warp_sum(acc[r]);
}

// XSMEM: x is staged in shared memory (needed for the fused pre-norm). Without a pre-norm the
// lanes read x straight from global memory (it is small and stays in L1/L2): no prologue, no
// shared memory, more blocks resident per SM.
template <typename W, bool VECTOR, int UNROLL, bool XSMEM>
__global__ void __launch_bounds__(k_warps * 32) gemv_kernel(GemvArgs a) {
    extern __shared__ float s_x[];
    const float* xin = a.x;
    if (XSMEM) {
        load_x(s_x, a.x, a.cols, static_cast<const W*>(a.norm_w), a.norm_offset, a.norm_eps);
        xin = s_x;
    }
    int r = blockIdx.x * k_warps + (threadIdx.x >> 5);
    int seg = 0;
    while (seg < a.n_seg && r >= a.seg[seg].rows) r -= a.seg[seg++].rows;
    if (seg >= a.n_seg) return;
    const GemvSegment& sg = a.seg[seg];
    const W* rows[1] = {static_cast<const W*>(sg.w) + size_t(r) * a.cols};
    float dots[1];
    rows_dot<W, VECTOR, UNROLL, 1>(rows, xin, a.cols, dots);
    const float dot = dots[0];
    if ((threadIdx.x & 31) == 0) {
        const float b = sg.b ? to_float(static_cast<const W*>(sg.b)[r]) : 0.0f;
        sg.y[r] = (a.accumulate ? sg.y[r] : 0.0f) + dot + b;
    }
}

template <typename W, bool VECTOR, int UNROLL>
__global__ void __launch_bounds__(k_warps * 32)
    gemv_gated_kernel(const W* wg, const W* wu, const W* bg, const W* bu, int rows, int cols, const float* x,
                      const W* norm_w, float offset, float eps, GateAct act, float* y) {
    extern __shared__ float s_x[];
    load_x(s_x, x, cols, norm_w, offset, eps);
    const int r = blockIdx.x * k_warps + (threadIdx.x >> 5);
    if (r >= rows) return;
    const W* wrows[2] = {wg + size_t(r) * cols, wu + size_t(r) * cols};
    float gu[2];
    rows_dot<W, VECTOR, UNROLL, 2>(wrows, s_x, cols, gu);
    float g = gu[0], u = gu[1];
    if ((threadIdx.x & 31) == 0) {
        if (bg) g += to_float(bg[r]);
        if (bu) u += to_float(bu[r]);
        y[r] = (act == GateAct::silu ? silu(g) : gelu_tanh(g)) * u;
    }
}

// 16-byte loads need every row to start 16-byte aligned: cols * sizeof(W) % 16 == 0 and the base
// pointers aligned. Otherwise a scalar path computes the same sums (slower, for odd test shapes).
bool vectorizable(int cols, size_t elem, std::initializer_list<const void*> ptrs) {
    if ((size_t(cols) * elem) % 16 != 0) return false;
    for (const void* p : ptrs)
        if (p && reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
    return true;
}

template <typename K>
void set_smem(K kernel, size_t smem) {
    if (smem > 48 * 1024) TT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
}

// 16-byte loads in flight per lane and row: TT_GEMV_UNROLL (4 or 8), default 4. A tuning knob
// for the H200 A/B in docs/BENCHMARKS.md.
int gemv_unroll() {
    static const int u = [] {
        const char* e = std::getenv("TT_GEMV_UNROLL");
        return e && std::atoi(e) == 8 ? 8 : 4;
    }();
    return u;
}

}  // namespace

void gemv(const GemvArgs& a, cudaStream_t s) {
    int rows = 0;
    for (int i = 0; i < a.n_seg; ++i) rows += a.seg[i].rows;
    const dim3 grid(unsigned((rows + k_warps - 1) / k_warps));
    const size_t smem = size_t(a.cols) * sizeof(float);
    TT_DISPATCH_FLOAT(a.wdt, W, {
        const bool vec = vectorizable(a.cols, sizeof(W), {a.seg[0].w, a.n_seg > 1 ? a.seg[1].w : nullptr, a.n_seg > 2 ? a.seg[2].w : nullptr});
        if (a.norm_w || !vec) {
            auto k = !vec ? gemv_kernel<W, false, 4, true>
                          : gemv_unroll() == 8 ? gemv_kernel<W, true, 8, true> : gemv_kernel<W, true, 4, true>;
            set_smem(k, smem);
            k<<<grid, k_warps * 32, smem, s>>>(a);
        } else {
            auto k = gemv_unroll() == 8 ? gemv_kernel<W, true, 8, false> : gemv_kernel<W, true, 4, false>;
            k<<<grid, k_warps * 32, 0, s>>>(a);
        }
    });
    TT_CUDA_LAUNCH_CHECK();
}

void gemv_gated(const void* wg, const void* wu, const void* bg, const void* bu, DType wdt, int rows, int cols,
                const float* x, const void* norm_w, float offset, float eps, GateAct act, float* y, cudaStream_t s) {
    const dim3 grid(unsigned((rows + k_warps - 1) / k_warps));
    const size_t smem = size_t(cols) * sizeof(float);
    TT_DISPATCH_FLOAT(wdt, W, {
        const W *g = static_cast<const W*>(wg), *u = static_cast<const W*>(wu);
        const W *b1 = static_cast<const W*>(bg), *b2 = static_cast<const W*>(bu), *nw = static_cast<const W*>(norm_w);
        const bool vec = vectorizable(cols, sizeof(W), {wg, wu});
        auto k = !vec ? gemv_gated_kernel<W, false, 4>
                      : gemv_unroll() == 8 ? gemv_gated_kernel<W, true, 8> : gemv_gated_kernel<W, true, 4>;
        set_smem(k, smem);
        k<<<grid, k_warps * 32, smem, s>>>(g, u, b1, b2, rows, cols, x, nw, offset, eps, act, y);
    });
    TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::cuda
