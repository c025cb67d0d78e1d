// Decode GEMV: y = W x for one token, the step that bounds batch-1 decoding. Each warp owns one
// output row and streams it with 16-byte loads, four in flight per lane; x (f32) sits in shared
// memory, RMS-normalized on the way in when the pre-norm is fused. One launch can cover several
// matrices that share x (q, k and v), so small projections still fill the GPU.
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/kernels.h"

namespace tt::cuda {

namespace {

constexpr int k_warps = 8;  // rows per block
constexpr int k_unroll = 4; // 16-byte loads in flight per lane

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

// Dot product of one weight row with s_x, by one warp. VEC: elements per 16-byte load.
template <typename W, bool VECTOR>
__device__ float row_dot(const W* w, const float* s_x, int cols) {
    const int lane = threadIdx.x & 31;
    float acc = 0;
    if constexpr (VECTOR) {
        constexpr int vec = 16 / sizeof(W);
        const int4* w4 = reinterpret_cast<const int4*>(w);
        const int n4 = cols / vec;
        int i = lane;
        for (; i + 32 * (k_unroll - 1) < n4; i += 32 * k_unroll) {
            int4 v[k_unroll];
#pragma unroll
            for (int u = 0; u < k_unroll; ++u) v[u] = __ldg(w4 + i + 32 * u);
#pragma unroll
            for (int u = 0; u < k_unroll; ++u) {
                const W* e = reinterpret_cast<const W*>(&v[u]);
                const float* xs = s_x + (i + 32 * u) * vec;
#pragma unroll
                for (int j = 0; j < vec; ++j) acc += to_float(e[j]) * xs[j];
            }
        }
        for (; i < n4; i += 32) {
            const int4 v = __ldg(w4 + i);
            const W* e = reinterpret_cast<const W*>(&v);
            const float* xs = s_x + i * vec;
#pragma unroll
            for (int j = 0; j < vec; ++j) acc += to_float(e[j]) * xs[j];
        }
    } else {
        for (int c = lane; c < cols; c += 32) acc += to_float(w[c]) * s_x[c];
    }
    return warp_sum(acc);
}

template <typename W, bool VECTOR>
__global__ void __launch_bounds__(k_warps * 32) gemv_kernel(GemvArgs a) {
    extern __shared__ float s_x[];
    load_x(s_x, a.x, a.cols, static_cast<const W*>(a.norm_w), a.norm_offset, a.norm_eps);
    int r = blockIdx.x * k_warps + (threadIdx.x >> 5);
    int seg = 0;
    while (seg < a.n_seg && r >= a.seg[seg].rows) r -= a.seg[seg++].rows;
    if (seg >= a.n_seg) return;
    const GemvSegment& sg = a.seg[seg];
    const float dot = row_dot<W, VECTOR>(static_cast<const W*>(sg.w) + size_t(r) * a.cols, s_x, a.cols);
    if ((threadIdx.x & 31) == 0) {
        const float b = sg.b ? to_float(static_cast<const W*>(sg.b)[r]) : 0.0f;
        sg.y[r] = (a.accumulate ? sg.y[r] : 0.0f) + dot + b;
    }
}

template <typename W, bool VECTOR>
__global__ void __launch_bounds__(k_warps * 32)
    gemv_gated_kernel(const W* wg, const W* wu, const W* bg, const W* bu, int rows, int cols, const float* x,
                      const W* norm_w, float offset, float eps, GateAct act, float* y) {
    extern __shared__ float s_x[];
    load_x(s_x, x, cols, norm_w, offset, eps);
    const int r = blockIdx.x * k_warps + (threadIdx.x >> 5);
    if (r >= rows) return;
    float g = row_dot<W, VECTOR>(wg + size_t(r) * cols, s_x, cols);
    float u = row_dot<W, VECTOR>(wu + size_t(r) * cols, s_x, cols);
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
        if (vec) {
            set_smem(gemv_kernel<W, true>, smem);
            gemv_kernel<W, true><<<grid, k_warps * 32, smem, s>>>(a);
        } else {
            set_smem(gemv_kernel<W, false>, smem);
            gemv_kernel<W, false><<<grid, k_warps * 32, smem, s>>>(a);
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
        if (vectorizable(cols, sizeof(W), {wg, wu})) {
            set_smem(gemv_gated_kernel<W, true>, smem);
            gemv_gated_kernel<W, true><<<grid, k_warps * 32, smem, s>>>(g, u, b1, b2, rows, cols, x, nw, offset, eps, act, y);
        } else {
            set_smem(gemv_gated_kernel<W, false>, smem);
            gemv_gated_kernel<W, false><<<grid, k_warps * 32, smem, s>>>(g, u, b1, b2, rows, cols, x, nw, offset, eps, act, y);
        }
    });
    TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::cuda
