// Decode GEMV: y = W x for one token, the step that bounds batch-1 decoding. Each warp streams
// whole weight rows with 16-byte loads, several in flight per lane. The grid is persistent: as many
// blocks as fit on the GPU at once, each warp taking every (grid warps)-th row, so the per-block
// prologue (x into shared memory, RMS-normalized when the pre-norm is fused) is paid once per
// block rather than once per 8 rows — on the H200 that prologue, repeated per small block, held
// the gated GEMV to 58% of DRAM peak. The first loads of each warp are issued before the prologue,
// so DRAM is busy while x is prepared — and, under programmatic dependent launch (launch.h), while
// the previous kernel finishes. One launch can cover several matrices that share x (q, k, v).
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/gemv.cuh"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/launch.cuh"

namespace tt::cuda {

namespace {

// The fused post-norm (GemvArgs::post_norm): the last block to finish (threadFenceReduction: every
// block fences its rows of y before counting its arrival) normalizes y and adds it to the
// residual, so Gemma's sandwich norms cost no launch of their own.
template <typename W>
__device__ void post_norm_tail(const GemvArgs& a, int rows) {
    __shared__ bool s_last;
    __shared__ float scratch[32];
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) s_last = atomicAdd(a.post_arrivals, 1) == int(gridDim.x) - 1;
    __syncthreads();
    if (!s_last) return;
    if (threadIdx.x == 0) *a.post_arrivals = 0;  // ready for the next launch (graph replay)
    const float* y = a.seg[0].y;
    float ss = 0;
    for (int i = threadIdx.x; i < rows; i += blockDim.x) {
        const float v = __ldcg(y + i);
        ss += v * v;
    }
    const float inv = rsqrtf(block_sum(ss, scratch) / rows + a.norm_eps);
    const W* w = static_cast<const W*>(a.post_norm);
    const float scale = a.row_scale ? to_float(static_cast<const W*>(a.row_scale)[0]) : 1.0f;
    for (int i = threadIdx.x; i < rows; i += blockDim.x) {
        const float v = a.residual[i] + __ldcg(y + i) * inv * (to_float(w[i]) + a.norm_offset);
        a.residual[i] = a.row_scale ? v * scale : v;
    }
}

// PENDING: the input is a.pending (stream_rows); its own instantiation, so that the prologue it
// adds leaves the code of every other GEMV as it was.
template <typename W, bool VECTOR, bool XSMEM, bool SLICED, int WARPS, int MIN_BLOCKS, bool PENDING>
__global__ void __launch_bounds__(WARPS * 32, MIN_BLOCKS) gemv_kernel(GemvArgs a, int rows, int kslices) {
    auto rows_of = [&](int r, const W* (&w)[1]) {
        int seg = 0;
        while (r >= a.seg[seg].rows) r -= a.seg[seg++].rows;
        w[0] = static_cast<const W*>(a.seg[seg].w) + size_t(r) * a.cols;
    };
    auto epilogue = [&](int r, const float (&dot)[1]) {
        int seg = 0;
        while (r >= a.seg[seg].rows) r -= a.seg[seg++].rows;
        const GemvSegment& sg = a.seg[seg];
        const float b = sg.b ? to_float(static_cast<const W*>(sg.b)[r]) : 0.0f;
        if (a.y_mul) {
            const float g = dot[0] + b;
            sg.y[r] = (a.y_act == GateAct::silu ? silu(g) : gelu_tanh(g)) * a.y_mul[r];
        } else {
            sg.y[r] = (a.accumulate ? sg.y[r] : 0.0f) + dot[0] + b;
        }
    };
    stream_rows<W, VECTOR, 1, XSMEM, SLICED, WARPS, true, false, PENDING>(rows, a.cols, kslices, a.x, static_cast<const W*>(a.norm_w),
                                                                      a.norm_offset, a.norm_eps, a.pending, rows_of, epilogue);
    if (a.post_norm) post_norm_tail<W>(a, rows);
}

template <typename W, bool VECTOR, bool SLICED, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
    gemv_gated_kernel(const W* wg, const W* wu, const W* bg, const W* bu, int rows, int cols, const float* x,
                      const W* norm_w, float offset, float eps, GateAct act, float* y, int kslices) {
    auto rows_of = [&](int r, const W* (&w)[2]) {
        w[0] = wg + size_t(r) * cols;
        w[1] = wu + size_t(r) * cols;
    };
    auto epilogue = [&](int r, const float (&gu)[2]) {
        const float g = gu[0] + (bg ? to_float(bg[r]) : 0.0f), u = gu[1] + (bu ? to_float(bu[r]) : 0.0f);
        y[r] = (act == GateAct::silu ? silu(g) : gelu_tanh(g)) * u;
    };
    stream_rows<W, VECTOR, 2, true, SLICED, WARPS>(rows, cols, kslices, x, norm_w, offset, eps, PendingResidual{}, rows_of,
                                                   epilogue);
}

// (xsmem is always true with PENDING: the second choice of each pair is then the first again)
template <int WARPS, int MINB, typename W, bool PENDING>
void gemv_launch(const GemvArgs& a, int rows, bool vec, bool xsmem, size_t sm, cudaStream_t s) {
    auto k = !vec ? gemv_kernel<W, false, true, false, WARPS, MINB, PENDING>
             : xsmem ? gemv_kernel<W, true, true, false, WARPS, MINB, PENDING> : gemv_kernel<W, true, PENDING, false, WARPS, MINB, PENDING>;
    const int ks = kslices_for(rows, a.cols, sizeof(W), vec, resident_blocks(k, sm, WARPS), WARPS);
    if (ks > 1)
        k = xsmem ? gemv_kernel<W, true, true, true, WARPS, MINB, PENDING> : gemv_kernel<W, true, PENDING, true, WARPS, MINB, PENDING>;
    launch(k, grid_for(rows, ks, resident_blocks(k, sm, WARPS), WARPS), WARPS * 32, sm, s, a, rows, ks);
}

template <int WARPS, int MINB, typename W>
void gemv_launch(const GemvArgs& a, int rows, bool vec, bool xsmem, size_t sm, cudaStream_t s) {
    if (a.pending.y) gemv_launch<WARPS, MINB, W, true>(a, rows, vec, xsmem, sm, s);
    else gemv_launch<WARPS, MINB, W, false>(a, rows, vec, xsmem, sm, s);
}

template <int WARPS, typename W>
void gated_launch(const W* g, const W* u, const W* b1, const W* b2, int rows, int cols, const float* x, const W* nw,
                  float offset, float eps, GateAct act, float* y, bool vec, size_t smem, cudaStream_t s) {
    auto k = !vec ? gemv_gated_kernel<W, false, false, WARPS> : gemv_gated_kernel<W, true, false, WARPS>;
    const int ks = kslices_for(rows, cols, sizeof(W), vec, resident_blocks(k, smem, WARPS), WARPS);
    if (ks > 1) k = gemv_gated_kernel<W, true, true, WARPS>;
    launch(k, grid_for(rows, ks, resident_blocks(k, smem, WARPS), WARPS), WARPS * 32, smem, s, g, u, b1, b2, rows, cols, x, nw,
           offset, eps, act, y, ks);
}

}  // namespace

void gemv(const GemvArgs& a, cudaStream_t s) {
    if (a.quant != QuantScheme::none) return gemv_quant(a, s);
    int rows = 0;
    for (int i = 0; i < a.n_seg; ++i) rows += a.seg[i].rows;
    if ((a.post_norm || a.y_mul) && (a.n_seg != 1 || a.accumulate || (a.post_norm && (!a.residual || !a.post_arrivals))))
        fail("gemv: a fused post-norm or gated output takes one segment, no accumulate (and the residual and its counter)");
    if (a.pending.y && (!a.pending.residual || !a.pending.norm || !a.pending.out || a.pending.out == a.pending.residual))
        fail("gemv: a pending residual needs the residual, its post-norm weight and an output apart from the residual");
    if (a.pending.y && a.post_norm) fail("gemv: a pending residual as input and a fused post-norm into the residual exclude each other");
    // x staged in shared memory; a pending residual takes two more rows of scratch (load_x_pending)
    const size_t smem = (a.pending.y ? 3 : 1) * size_t(a.cols) * sizeof(float);
    TT_DISPATCH_FLOAT(a.wdt, W, {
        const bool vec = vectorizable(a.cols, sizeof(W), {a.seg[0].w, a.n_seg > 1 ? a.seg[1].w : nullptr, a.n_seg > 2 ? a.seg[2].w : nullptr});
        const bool xsmem = a.norm_w || !vec || a.pending.y;
        const size_t sm = xsmem ? smem : 0;
        switch (gemv_warps()) {
        case 8: gemv_launch<8, 1, W>(a, rows, vec, xsmem, sm, s); break;
        case 32: gemv_launch<32, 1, W>(a, rows, vec, xsmem, sm, s); break;
        default:
            if (gemv_two_blocks()) gemv_launch<16, 2, W>(a, rows, vec, xsmem, sm, s);
            else gemv_launch<16, 1, W>(a, rows, vec, xsmem, sm, s);
        }
    });
    TT_CUDA_LAUNCH_CHECK();
}

void gemv_gated(const void* wg, const void* wu, const void* bg, const void* bu, DType wdt, int rows, int cols,
                const float* x, const void* norm_w, float offset, float eps, GateAct act, float* y, cudaStream_t s,
                QuantScheme quant, const float* gs, const float* us, int group_size) {
    if (quant != QuantScheme::none)
        return gemv_gated_quant(wg, wu, gs, us, quant, group_size, bg, bu, wdt, rows, cols, x, norm_w, offset, eps, act, y, s);
    const size_t smem = size_t(cols) * sizeof(float);
    TT_DISPATCH_FLOAT(wdt, W, {
        const W *g = static_cast<const W*>(wg), *u = static_cast<const W*>(wu);
        const W *b1 = static_cast<const W*>(bg), *b2 = static_cast<const W*>(bu), *nw = static_cast<const W*>(norm_w);
        const bool vec = vectorizable(cols, sizeof(W), {wg, wu});
        switch (gemv_warps()) {
        case 8: gated_launch<8, W>(g, u, b1, b2, rows, cols, x, nw, offset, eps, act, y, vec, smem, s); break;
        case 32: gated_launch<32, W>(g, u, b1, b2, rows, cols, x, nw, offset, eps, act, y, vec, smem, s); break;
        default: gated_launch<16, W>(g, u, b1, b2, rows, cols, x, nw, offset, eps, act, y, vec, smem, s);
        }
    });
    TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::cuda
