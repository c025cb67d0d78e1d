// The persistent GEMV machinery shared by the dense decode GEMVs (gemv.cu) and the routed
// experts' GEMVs (moe.cu): a warp streams whole weight rows with 16-byte loads, several in flight
// per lane; the grid holds as many blocks as fit on the GPU at once (resident_blocks), each warp
// taking every (grid warps)-th row; optionally x is staged (and RMS-normalized) in shared memory
// once per block, and several warps share a row when rows are few (kslices_for). Why each choice
// was made is in gemv.cu's header and docs/BENCHMARKS.md. Device templates and host helpers only:
// the kernels and their entry points live in the .cu files.
#pragma once

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/launch.cuh"
#include "backends/cuda/kernels/norm.cuh"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <type_traits>
#include <utility>

namespace tt::cuda {

// Loads x into shared memory as f32 with 16-byte loads (cols % 4 == 0 and x aligned, else scalar).
// With norm_w, what is stored is x * (norm_w + offset) and the return value is the RMS factor
// 1 / sqrt(mean(x^2) + eps), which the caller applies to each dot product instead: the factor is a
// scalar, so the weighted x needs no block-wide reduction first. One barrier instead of three, and
// no second pass over shared memory — that prologue sat between the q/k/v GEMV's first loads and
// the rest of its (short) run. Otherwise returns 1. A thread takes 8 columns at a time, their x
// and weights loaded together (16-byte pieces), so a block of 512 threads stages 4096 columns in
// one round trip: these reads queue behind the weights' first loads, issued before pdl_wait, and
// each trip there is long (bench/results/2026-12-04-h200-gemv-timeline).
template <typename W>
__device__ float load_x(float* s_x, const float* x, int cols, const W* norm_w, float offset, float eps) {
    __shared__ float scratch[32];
    float ss = 0;
    auto scale = [&](int i) { return norm_w ? to_float(norm_w[i]) + offset : 1.0f; };
    const bool x16 = (reinterpret_cast<uintptr_t>(x) & 15) == 0;
    if ((cols & 7) == 0 && x16 && (!norm_w || (reinterpret_cast<uintptr_t>(norm_w) & 15) == 0)) {
        constexpr int wvec = int(8 * sizeof(W) / 16);  // 16-byte pieces of 8 weights
        for (int i = threadIdx.x; i < cols / 8; i += blockDim.x) {
            const float4 a = reinterpret_cast<const float4*>(x)[2 * i], b = reinterpret_cast<const float4*>(x)[2 * i + 1];
            float w[8] = {1, 1, 1, 1, 1, 1, 1, 1};
            if (norm_w) {
                int4 raw[wvec];
#pragma unroll
                for (int k = 0; k < wvec; ++k) raw[k] = __ldg(reinterpret_cast<const int4*>(norm_w + 8 * i) + k);
                const W* e = reinterpret_cast<const W*>(raw);
#pragma unroll
                for (int k = 0; k < 8; ++k) w[k] = to_float(e[k]) + offset;
            }
            reinterpret_cast<float4*>(s_x)[2 * i] = make_float4(a.x * w[0], a.y * w[1], a.z * w[2], a.w * w[3]);
            reinterpret_cast<float4*>(s_x)[2 * i + 1] = make_float4(b.x * w[4], b.y * w[5], b.z * w[6], b.w * w[7]);
            ss += a.x * a.x + a.y * a.y + a.z * a.z + a.w * a.w + b.x * b.x + b.y * b.y + b.z * b.z + b.w * b.w;
        }
    } else if ((cols & 3) == 0 && x16) {
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

// load_x when the input is the pending residual (PendingResidual, kernels.h): every block forms
// it (residual_row), block 0 stores it, and the pre-norm (when norm_w) is applied as in load_x,
// its RMS factor returned. s_x holds 3 * cols floats here.
template <typename W>
__device__ float load_x_pending(float* s_x, int cols, const W* norm_w, float offset, float eps, const PendingResidual& p) {
    __shared__ float scratch[32];
    float* wn = s_x + 2 * cols;
    const float scale = p.row_scale ? to_float(static_cast<const W*>(p.row_scale)[0]) : 1.0f;
    const float ss = residual_row(s_x, s_x + cols, wn, p.residual, p.y, static_cast<const W*>(p.norm), norm_w, p.norm_offset,
                                  offset, p.norm_eps, scale, cols, scratch);
    const float total = norm_w ? block_sum(ss, scratch) : 0.0f;  // (its barrier orders wn, staged with another stride)
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
        if (blockIdx.x == 0) p.out[i] = s_x[i];
        if (norm_w) s_x[i] *= wn[i];
    }
    __syncthreads();  // s_x is complete
    return norm_w ? rsqrtf(total / cols + eps) : 1.0f;
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
// TAIL_BATCH: the vectors left after the unrolled loop (fewer than k_unroll per lane) are loaded
// in one predicated batch rather than one round trip each — for short rows, where that tail is
// the whole row (an expert's down row of 768 bf16 is 96 vectors, under the 32 * k_unroll = 128 of
// one unrolled step, so without it each lane would wait for three loads one after another).
template <typename W, bool VECTOR, int R, bool TAIL_BATCH = false>
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
        if constexpr (TAIL_BATCH) {
            Batch<R> b{};
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int u = 0; u < k_unroll; ++u)
                    if (i + 32 * u < n4) b.v[r][u] = __ldg(reinterpret_cast<const int4*>(w[r]) + i + 32 * u);
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int u = 0; u < k_unroll; ++u)
                    if (i + 32 * u < n4) acc[r] += dot16<W>(b.v[r][u], x + (i + 32 * u) * vec);
        } else {
            for (; i < n4; i += 32)
#pragma unroll
                for (int r = 0; r < R; ++r) acc[r] += dot16<W>(__ldg(reinterpret_cast<const int4*>(w[r]) + i), x + i * vec);
        }
    } else {
        for (int c = lane; c < cols; c += 32)
#pragma unroll
            for (int r = 0; r < R; ++r) acc[r] += to_float(w[r][c]) * x[c];
    }
#pragma unroll
    for (int r = 0; r < R; ++r) out[r] = warp_sum(acc[r]);
}

// The persistent row loop shared by the GEMV kernels (gemv.cu, moe.cu): rows_of(r, ptrs) fills
// the R row pointers of output row r (and, when it returns an int, that is where the row's input
// starts in x: an expert's own slice in moe_gemv_down; void: every row shares x), epilogue(r,
// sums) stores it. XSMEM: x
// is staged in shared memory (needed for the fused pre-norm); otherwise lanes read x straight from
// global memory (small, stays in L1/L2). kslices > 1 (a divisor of WARPS): that many warps share
// each row, one column slice each, and add up through shared memory — for matrices with too few
// rows to give every warp one (the output and down projections of small models), where a warp per
// row left most of the GPU idle. PRELOAD: each warp's first loads are issued before pdl_wait(), so
// rows_of must then read nothing the previous kernel writes (false when the row pointers
// themselves come from it: the routed experts). TAIL_BATCH: see rows_dot. PENDING (XSMEM only):
// x is `pending`, the pending residual, formed by load_x_pending.
template <typename W, bool VECTOR, int R, bool XSMEM, bool SLICED, int WARPS, bool PRELOAD = true, bool TAIL_BATCH = false,
          bool PENDING = false, typename RowsOf, typename Epilogue>
__device__ void stream_rows(int rows, int cols, int kslices_arg, const float* x, const W* norm_w, float offset, float eps,
                            const PendingResidual& pending, RowsOf rows_of, Epilogue epilogue) {
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
    if constexpr (VECTOR && PRELOAD) {
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
    static_assert(XSMEM || !PENDING, "the pending residual is formed in shared memory");
    if constexpr (PENDING) {
        x_scale = load_x_pending(s_x, cols, norm_w, offset, eps, pending);
        xin = s_x;
    } else if constexpr (XSMEM) {
        x_scale = load_x(s_x, x, cols, norm_w, offset, eps);
        xin = s_x;
    }
    for (int g = blockIdx.x; g * rows_per_group < rows; g += gridDim.x) {  // uniform over the block
        const int r = g * rows_per_group + row_in_group;
        float sums[R] = {};
        if (r < rows) {
            const W* w[R];
            const float* xr = xin;
            if constexpr (std::is_void_v<decltype(rows_of(r, w))>) rows_of(r, w);
            else xr += rows_of(r, w);
#pragma unroll
            for (int i = 0; i < R; ++i) w[i] += c0;
            rows_dot<W, VECTOR, R, TAIL_BATCH>(w, xr + c0, slice_cols, pre, have_pre && g == int(blockIdx.x), sums);
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

// 16-byte loads need every row to start 16-byte aligned: cols * sizeof(W) % 16 == 0 and the base
// pointers aligned. Otherwise a scalar path computes the same sums (slower, for odd test shapes).
inline bool vectorizable(int cols, size_t elem, std::initializer_list<const void*> ptrs) {
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
    allow_dynamic_smem(kernel, smem);
    int dev = 0, sms = 0, per_sm = 0;
    TT_CUDA_CHECK(cudaGetDevice(&dev));
    TT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    TT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, warps * 32, smem));
    return cache[key] = std::max(1, sms * per_sm);
}

// A/B knobs for docs/BENCHMARKS.md: warps per block (TT_GEMV_WARPS: 8, 16 or 32; default 16) and
// TT_GEMV_MIN_BLOCKS=1 (16 warps only: let the compiler use more registers than two blocks per SM
// allow).
inline int env_int(const char* name, int fallback) {
    const char* e = std::getenv(name);
    return e ? std::atoi(e) : fallback;
}
inline int gemv_warps() {
    static const int w = [] {
        const int v = env_int("TT_GEMV_WARPS", 16);
        return v == 8 || v == 32 ? v : 16;
    }();
    return w;
}
inline bool gemv_two_blocks() {
    static const bool b = env_int("TT_GEMV_MIN_BLOCKS", 2) == 2;
    return b;
}

// Warps per row (1, 2, 4 or 8): more when the rows alone would leave resident warps idle, as long
// as each slice keeps whole 16-byte vectors for every lane at least twice. (Choosing k by the
// fewest passes over the resident warps — balancing the last pass — measured slower on the H200,
// docs/BENCHMARKS.md.)
inline int kslices_for(int rows, int cols, size_t elem, bool vec, int resident, int warps) {
    int k = 1;
    const int vec_elems = int(16 / elem);
    while (vec && k < warps && size_t(rows) * k * 2 <= size_t(resident) * warps && cols % (2 * k * vec_elems) == 0 &&
           cols / (2 * k) >= 64 * vec_elems)
        k *= 2;
    return k;
}

inline unsigned grid_for(int rows, int kslices, int resident, int warps) {
    const int per_block = warps / kslices;
    return unsigned(std::min((rows + per_block - 1) / per_block, resident));
}

}  // namespace tt::cuda
