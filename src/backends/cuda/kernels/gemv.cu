// Decode GEMV: y = W x for one token, the step that bounds batch-1 decoding. Each warp owns one
// output row and streams it with 16-byte loads, eight in flight per lane. The first loads are
// issued before the kernel waits for its predecessor (programmatic dependent launch), so the
// weight stream starts while the previous kernel drains; x (f32) then goes to shared memory,
// RMS-normalized on the way in when the pre-norm is fused. One launch can cover several matrices
// that share x (q, k and v), so small projections still fill the GPU.
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/kernels.h"

namespace tt::cuda {

namespace {

constexpr int k_warps = 8;   // rows per block
constexpr int k_unroll = 8;  // 16-byte loads in flight per lane

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
    float acc = 0;
#pragma unroll
    for (int j = 0; j < vec; ++j) acc += to_float(e[j]) * xs[j];
    return acc;
}

// One row's stream, per lane: vectors lane, lane + 32, ... of the row (16 bytes each).
template <typename W>
struct RowStream {
    const int4* w4;
    int n;       // vectors of this lane
    int4 pre[k_unroll];

    __device__ void start(const W* row, int cols) {
        constexpr int vec = 16 / sizeof(W);
        const int lane = threadIdx.x & 31;
        w4 = reinterpret_cast<const int4*>(row) + lane;
        const int n4 = cols / vec;
        n = n4 > lane ? (n4 - lane + 31) / 32 : 0;
#pragma unroll
        for (int u = 0; u < k_unroll; ++u)
            if (u < n) pre[u] = __ldg(w4 + 32 * u);
    }
    __device__ float finish(const float* s_x) const {
        constexpr int vec = 16 / sizeof(W);
        const int lane = threadIdx.x & 31;
        float acc = 0;
#pragma unroll
        for (int u = 0; u < k_unroll; ++u)
            if (u < n) acc += dot16<W>(pre[u], s_x + (lane + 32 * u) * vec);
        for (int j = k_unroll; j < n; j += k_unroll) {
            int4 v[k_unroll];
#pragma unroll
            for (int u = 0; u < k_unroll; ++u)
                if (j + u < n) v[u] = __ldg(w4 + 32 * (j + u));
#pragma unroll
            for (int u = 0; u < k_unroll; ++u)
                if (j + u < n) acc += dot16<W>(v[u], s_x + (lane + 32 * (j + u)) * vec);
        }
        return warp_sum(acc);
    }
};

// Scalar path for rows that are not 16-byte aligned (odd test shapes).
template <typename W>
__device__ float row_dot_scalar(const W* w, const float* s_x, int cols) {
    float acc = 0;
    for (int c = threadIdx.x & 31; c < cols; c += 32) acc += to_float(w[c]) * s_x[c];
    return warp_sum(acc);
}

template <typename W, bool VECTOR>
__global__ void __launch_bounds__(k_warps * 32) gemv_kernel(GemvArgs a) {
    extern __shared__ float s_x[];
    pdl_trigger();
    int r = blockIdx.x * k_warps + (threadIdx.x >> 5);
    int seg = 0;
    while (seg < a.n_seg && r >= a.seg[seg].rows) r -= a.seg[seg++].rows;
    const bool active = seg < a.n_seg;
    const W* row = active ? static_cast<const W*>(a.seg[seg].w) + size_t(r) * a.cols : nullptr;
    RowStream<W> rs;
    if (VECTOR && active) rs.start(row, a.cols);  // weights do not depend on the predecessor
    pdl_wait();
    load_x(s_x, a.x, a.cols, static_cast<const W*>(a.norm_w), a.norm_offset, a.norm_eps);
    if (!active) return;
    const float dot = VECTOR ? rs.finish(s_x) : row_dot_scalar(row, s_x, a.cols);
    if ((threadIdx.x & 31) == 0) {
        const GemvSegment& sg = a.seg[seg];
        const float b = sg.b ? to_float(static_cast<const W*>(sg.b)[r]) : 0.0f;
        sg.y[r] = (a.accumulate ? sg.y[r] : 0.0f) + dot + b;
    }
}

template <typename W, bool VECTOR>
__global__ void __launch_bounds__(k_warps * 32)
    gemv_gated_kernel(const W* wg, const W* wu, const W* bg, const W* bu, int rows, int cols, const float* x,
                      const W* norm_w, float offset, float eps, GateAct act, float* y) {
    extern __shared__ float s_x[];
    pdl_trigger();
    const int r = blockIdx.x * k_warps + (threadIdx.x >> 5);
    const bool active = r < rows;
    RowStream<W> sg, su;
    if (VECTOR && active) {
        sg.start(wg + size_t(r) * cols, cols);
        su.start(wu + size_t(r) * cols, cols);
    }
    pdl_wait();
    load_x(s_x, x, cols, norm_w, offset, eps);
    if (!active) return;
    float g = VECTOR ? sg.finish(s_x) : row_dot_scalar(wg + size_t(r) * cols, s_x, cols);
    float u = VECTOR ? su.finish(s_x) : row_dot_scalar(wu + size_t(r) * cols, s_x, cols);
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

}  // namespace

void gemv(const GemvArgs& a, cudaStream_t s) {
    int rows = 0;
    for (int i = 0; i < a.n_seg; ++i) rows += a.seg[i].rows;
    const dim3 grid(unsigned((rows + k_warps - 1) / k_warps));
    const size_t smem = size_t(a.cols) * sizeof(float);
    TT_DISPATCH_FLOAT(a.wdt, W, {
        const bool vec = vectorizable(a.cols, sizeof(W), {a.seg[0].w, a.n_seg > 1 ? a.seg[1].w : nullptr, a.n_seg > 2 ? a.seg[2].w : nullptr});
        auto k = vec ? gemv_kernel<W, true> : gemv_kernel<W, false>;
        set_smem(k, smem);
        launch_pdl(k, grid, dim3(k_warps * 32), smem, s, a);
    });
}

void gemv_gated(const void* wg, const void* wu, const void* bg, const void* bu, DType wdt, int rows, int cols,
                const float* x, const void* norm_w, float offset, float eps, GateAct act, float* y, cudaStream_t s) {
    const dim3 grid(unsigned((rows + k_warps - 1) / k_warps));
    const size_t smem = size_t(cols) * sizeof(float);
    TT_DISPATCH_FLOAT(wdt, W, {
        auto k = vectorizable(cols, sizeof(W), {wg, wu}) ? gemv_gated_kernel<W, true> : gemv_gated_kernel<W, false>;
        set_smem(k, smem);
        launch_pdl(k, grid, dim3(k_warps * 32), smem, s, static_cast<const W*>(wg), static_cast<const W*>(wu),
                   static_cast<const W*>(bg), static_cast<const W*>(bu), rows, cols, x, static_cast<const W*>(norm_w),
                   offset, eps, act, y);
    });
}

}  // namespace tt::cuda
