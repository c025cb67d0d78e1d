// Decode GEMV: y = W x for one token, the step that bounds batch-1 decoding. Each warp streams
// whole weight rows with 16-byte loads, several in flight per lane. The grid is persistent: as many
// blocks as fit on the GPU at once, each warp taking every (grid warps)-th row, so the per-block
// prologue (x into shared memory, RMS-normalized when the pre-norm is fused) is paid once per
// block rather than once per 8 rows — on the H200 that prologue, repeated per small block, held
// the gated GEMV to 58% of DRAM peak. The first loads of each warp are issued before the prologue,
// so DRAM is busy while x is prepared — and, under programmatic dependent launch (launch.h), while
// the previous kernel finishes. One launch can cover several matrices that share x (q, k, v).
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/launch.cuh"

#include <cstdlib>
#include <map>

namespace tt::cuda {

namespace {

// Warps per block: the WARPS template parameter (see gemv_warps()).

// Loads x into shared memory as f32 with 16-byte loads (cols % 4 == 0 and x aligned, else scalar).
// With norm_w, what is stored is x * (norm_w + offset) and the return value is the RMS factor
// 1 / sqrt(mean(x^2) + eps), which the caller applies to each dot product instead: the factor is a
// scalar, so the weighted x needs no block-wide reduction first. One barrier instead of three, and
// no second pass over shared memory — that prologue sat between the q/k/v GEMV's first loads and
// the rest of its (short) run. Otherwise returns 1.
template <typename W>
__device__ float load_x(float* s_x, const float* x, int cols, const W* norm_w, float offset, float eps) {
    __shared__ float scratch[32];
    float ss = 0;
    auto scale = [&](int i) { return norm_w ? to_float(norm_w[i]) + offset : 1.0f; };
    if ((cols & 3) == 0 && (reinterpret_cast<uintptr_t>(x) & 15) == 0) {
        for (int i = threadIdx.x; i < cols / 4; i += blockDim.x) {
            const float4 v = reinterpret_cast<const float4*>(x)[i];
            reinterpret_cast<float4*>(s_x)[i] = make_float4(v.x * scale(4 * i), v.y * scale(4 * i + 1), v.z * scale(4 * i + 2),
                                                            v.w * scale(4 * i + 3));
            ss += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
        }
    } else {
        for (int i = threadIdx.x; i < cols; i += blockDim.x) {
            const float v = x[i];
            s_x[i] = v * scale(i);
            ss += v * v;
        }
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = int(blockDim.x >> 5);
    if (norm_w) {
        ss = warp_sum(ss);
        if (lane == 0) scratch[warp] = ss;
    }
    __syncthreads();  // s_x and the per-warp sums are complete
    if (!norm_w) return 1.0f;
    float total = 0;
    for (int k = 0; k < n_warps; ++k) total += scratch[k];  // the same order in every thread
    return rsqrtf(total / cols + eps);
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

// 16-byte loads in flight per lane and row (8 measured no faster on the H200, docs/BENCHMARKS.md).
constexpr int k_unroll = 4;

// The loads of one step of a warp: k_unroll 16-byte pieces of each of R rows per lane.
template <int R>
struct Batch {
    int4 v[R][k_unroll];
    template <typename W>
    __device__ __forceinline__ void load(const W* const (&w)[R], int i) {
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int u = 0; u < k_unroll; ++u) v[r][u] = __ldg(reinterpret_cast<const int4*>(w[r]) + i + 32 * u);
    }
};

// Dot products of R weight rows (gate and up: R = 2) with x, by one warp; `pre` holds the first
// batch when `have_pre` (loaded before the block's prologue). Every lane ends with the sums.
template <typename W, bool VECTOR, int R>
__device__ void rows_dot(const W* const (&w)[R], const float* x, int cols, const Batch<R>& pre, bool have_pre,
                         float (&out)[R]) {
    const int lane = threadIdx.x & 31;
    float acc[R] = {};
    if constexpr (VECTOR) {
        constexpr int vec = 16 / sizeof(W);
        const int n4 = cols / vec;
        int i = lane;
        for (; i + 32 * (k_unroll - 1) < n4; i += 32 * k_unroll) {
            Batch<R> b;
            if (have_pre) {
                b = pre;
                have_pre = false;
            } else {
                b.load(w, i);
            }
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int u = 0; u < k_unroll; ++u) acc[r] += dot16<W>(b.v[r][u], x + (i + 32 * u) * vec);
        }
        for (; i < n4; i += 32)
#pragma unroll
            for (int r = 0; r < R; ++r) acc[r] += dot16<W>(__ldg(reinterpret_cast<const int4*>(w[r]) + i), x + i * vec);
    } else {
        for (int c = lane; c < cols; c += 32)
#pragma unroll
            for (int r = 0; r < R; ++r) acc[r] += to_float(w[r][c]) * x[c];
    }
#pragma unroll
    for (int r = 0; r < R; ++r) out[r] = warp_sum(acc[r]);
}

// The persistent row loop shared by both kernels: rows_of(r, ptrs) fills the R row pointers of
// output row r, epilogue(r, sums) stores it. XSMEM: x is staged in shared memory (needed for the
// fused pre-norm); otherwise lanes read x straight from global memory (small, stays in L1/L2).
// kslices > 1 (a divisor of WARPS): that many warps share each row, one column slice each, and
// add up through shared memory — for matrices with too few rows to give every warp one (the
// output and down projections of small models), where a warp per row left most of the GPU idle.
template <typename W, bool VECTOR, int R, bool XSMEM, bool SLICED, int WARPS, typename RowsOf, typename Epilogue>
__device__ void stream_rows(int rows, int cols, int kslices_arg, const float* x, const W* norm_w, float offset, float eps,
                            RowsOf rows_of, Epilogue epilogue) {
    extern __shared__ float s_x[];
    __shared__ float s_part[WARPS][R];
    // A compile-time 1 unless SLICED: the common path keeps the register budget (and so the
    // resident warps) of a plain warp-per-row loop.
    const int kslices = SLICED ? kslices_arg : 1;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int rows_per_group = WARPS / kslices, row_in_group = warp / kslices, slice = warp % kslices;
    const int slice_cols = cols / kslices, c0 = slice * slice_cols;
    Batch<R> pre;
    bool have_pre = false;
    if constexpr (VECTOR) {
        const int first = blockIdx.x * rows_per_group + row_in_group;
        if (first < rows && lane + 32 * (k_unroll - 1) < slice_cols / int(16 / sizeof(W))) {
            const W* w[R];
            rows_of(first, w);
#pragma unroll
            for (int i = 0; i < R; ++i) w[i] += c0;
            pre.load(w, lane);
            have_pre = true;
        }
    }
    // Under PDL the loads above overlap the previous kernel's tail; x is its output.
    pdl_wait();
    pdl_launch_dependents();
    const float* xin = x;
    float x_scale = 1.0f;  // the RMS factor of a fused pre-norm (see load_x)
    if constexpr (XSMEM) {
        x_scale = load_x(s_x, x, cols, norm_w, offset, eps);
        xin = s_x;
    }
    for (int g = blockIdx.x; g * rows_per_group < rows; g += gridDim.x) {  // uniform over the block
        const int r = g * rows_per_group + row_in_group;
        float sums[R] = {};
        if (r < rows) {
            const W* w[R];
            rows_of(r, w);
#pragma unroll
            for (int i = 0; i < R; ++i) w[i] += c0;
            rows_dot<W, VECTOR, R>(w, xin + c0, slice_cols, pre, have_pre && g == int(blockIdx.x), sums);
#pragma unroll
            for (int i = 0; i < R; ++i) sums[i] *= x_scale;
        }
        if (!SLICED) {
            if (lane == 0 && r < rows) epilogue(r, sums);
            continue;
        }
        if (lane == 0)
#pragma unroll
            for (int i = 0; i < R; ++i) s_part[warp][i] = sums[i];
        __syncthreads();
        if (slice == 0 && lane == 0 && r < rows) {
            for (int k = 1; k < kslices; ++k)
#pragma unroll
                for (int i = 0; i < R; ++i) sums[i] += s_part[warp + k][i];
            epilogue(r, sums);
        }
        __syncthreads();
    }
}

template <typename W, bool VECTOR, bool XSMEM, bool SLICED, int WARPS, int MIN_BLOCKS>
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
        sg.y[r] = (a.accumulate ? sg.y[r] : 0.0f) + dot[0] + b;
    };
    stream_rows<W, VECTOR, 1, XSMEM, SLICED, WARPS>(rows, a.cols, kslices, a.x, static_cast<const W*>(a.norm_w), a.norm_offset,
                                             a.norm_eps, rows_of, epilogue);
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
    stream_rows<W, VECTOR, 2, true, SLICED, WARPS>(rows, cols, kslices, x, norm_w, offset, eps, rows_of, epilogue);
}

// 16-byte loads need every row to start 16-byte aligned: cols * sizeof(W) % 16 == 0 and the base
// pointers aligned. Otherwise a scalar path computes the same sums (slower, for odd test shapes).
bool vectorizable(int cols, size_t elem, std::initializer_list<const void*> ptrs) {
    if ((size_t(cols) * elem) % 16 != 0) return false;
    for (const void* p : ptrs)
        if (p && reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
    return true;
}

// Blocks of `kernel` that fit on the device at once with `smem` bytes each: the persistent grid.
template <typename K>
int resident_blocks(K kernel, size_t smem, int warps) {
    static std::map<std::pair<const void*, size_t>, int> cache;  // decode launches from one thread
    const auto key = std::make_pair(reinterpret_cast<const void*>(kernel), smem);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    if (smem > 48 * 1024) TT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    int dev = 0, sms = 0, per_sm = 0;
    TT_CUDA_CHECK(cudaGetDevice(&dev));
    TT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    TT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, warps * 32, smem));
    return cache[key] = std::max(1, sms * per_sm);
}

// A/B knobs for docs/BENCHMARKS.md: warps per block (TT_GEMV_WARPS: 8, 16 or 32; default 16) and
// TT_GEMV_MIN_BLOCKS=1 (16 warps only: let the compiler use more registers than two blocks per SM
// allow).
int env_int(const char* name, int fallback) {
    const char* e = std::getenv(name);
    return e ? std::atoi(e) : fallback;
}
int gemv_warps() {
    static const int w = [] {
        const int v = env_int("TT_GEMV_WARPS", 16);
        return v == 8 || v == 32 ? v : 16;
    }();
    return w;
}
bool gemv_two_blocks() {
    static const bool b = env_int("TT_GEMV_MIN_BLOCKS", 2) == 2;
    return b;
}

// Warps per row (1, 2, 4 or 8): more when the rows alone would leave resident warps idle, as long
// as each slice keeps whole 16-byte vectors for every lane at least twice. (Choosing k by the
// fewest passes over the resident warps — balancing the last pass — measured slower on the H200,
// docs/BENCHMARKS.md.)
int kslices_for(int rows, int cols, size_t elem, bool vec, int resident, int warps) {
    int k = 1;
    const int vec_elems = int(16 / elem);
    while (vec && k < warps && size_t(rows) * k * 2 <= size_t(resident) * warps && cols % (2 * k * vec_elems) == 0 &&
           cols / (2 * k) >= 64 * vec_elems)
        k *= 2;
    return k;
}

unsigned grid_for(int rows, int kslices, int resident, int warps) {
    const int per_block = warps / kslices;
    return unsigned(std::min((rows + per_block - 1) / per_block, resident));
}

template <int WARPS, int MINB, typename W>
void gemv_launch(const GemvArgs& a, int rows, bool vec, bool xsmem, size_t sm, cudaStream_t s) {
    auto k = !vec ? gemv_kernel<W, false, true, false, WARPS, MINB>
             : xsmem ? gemv_kernel<W, true, true, false, WARPS, MINB> : gemv_kernel<W, true, false, false, WARPS, MINB>;
    const int ks = kslices_for(rows, a.cols, sizeof(W), vec, resident_blocks(k, sm, WARPS), WARPS);
    if (ks > 1) k = xsmem ? gemv_kernel<W, true, true, true, WARPS, MINB> : gemv_kernel<W, true, false, true, WARPS, MINB>;
    launch(k, grid_for(rows, ks, resident_blocks(k, sm, WARPS), WARPS), WARPS * 32, sm, s, a, rows, ks);
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
    int rows = 0;
    for (int i = 0; i < a.n_seg; ++i) rows += a.seg[i].rows;
    const size_t smem = size_t(a.cols) * sizeof(float);
    TT_DISPATCH_FLOAT(a.wdt, W, {
        const bool vec = vectorizable(a.cols, sizeof(W), {a.seg[0].w, a.n_seg > 1 ? a.seg[1].w : nullptr, a.n_seg > 2 ? a.seg[2].w : nullptr});
        const bool xsmem = a.norm_w || !vec;
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
                const float* x, const void* norm_w, float offset, float eps, GateAct act, float* y, cudaStream_t s) {
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
