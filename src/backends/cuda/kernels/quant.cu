// Quantized weights on the GPU (core/quant.h, docs/QUANTIZATION.md): the decode GEMVs that read
// INT8 / INT4 rows, and the dequantization that feeds prefill's tensor-core GEMMs.
//
// Decode has two GEMVs. The tensor-core one (below, "mma") takes every shape whose rows are whole
// 16-byte pieces: INT4 always, INT8 when cols % 16 == 0 (every real model). The other takes odd
// INT8 row lengths (test shapes): one weight per lane and step, x staged in shared memory. Both
// form the products exactly (the tensor-core one on integers: q and x's digits, see below); the
// only roundings are x's there (to 15 signed bits of each group of 32 columns' largest element)
// and the f32 sums', in another order than the CPU reference's. Each group's sum is scaled by x's
// power of two (and INT4's group scale); INT8 applies its row scale once at the end.
//
// A CUDA-core GEMV that widened 16-byte pieces in registers (a byte permute, a subtraction and an
// FMA per weight) ran INT4 at 0.45-0.6 TB/s and INT8 at 1.2-1.8 TB/s on the H200: three
// instructions per weight take nearly every issue slot at INT4's 8.4e12 weights/s. The
// tensor-core GEMV replaced it (bench/results/2026-12-02-h200-quant/README.md has the A/B).
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/gemv.cuh"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/launch.cuh"
#include "backends/cuda/kernels/ptx.cuh"

#include <cstdlib>
#include <string>

namespace tt::cuda {

namespace {

constexpr int k_qwarps = 8;  // warps per block (the scalar INT8 GEMV)

// The weight rows a warp dots with x: R row bases (bytes) and their scales (a row's first).
template <int R>
struct QRows {
    const uint8_t* w[R];
    const float* s[R];
};

// The scalar INT8 loop, persistent: rows_of(g, QRows&) fills row group g (of n_groups),
// epilogue(g, sums) stores it (lane 0). One weight per lane and step.
template <int R, typename W, typename RowsOf, typename Epilogue>
__device__ void int8_rows(int n_groups, int cols, const float* x, const W* norm_w, float offset, float eps, RowsOf rows_of,
                          Epilogue epilogue) {
    extern __shared__ float s_x[];
    const int lane = threadIdx.x & 31;
    const int warp = int(blockIdx.x) * k_qwarps + int(threadIdx.x >> 5), n_warps = int(gridDim.x) * k_qwarps;
    pdl_wait();  // x is the previous kernel's output
    pdl_launch_dependents();
    const float x_scale = load_x(s_x, x, cols, norm_w, offset, eps);  // the RMS factor of a fused pre-norm
    for (int g = warp; g < n_groups; g += n_warps) {
        QRows<R> rw;
        rows_of(g, rw);
        float acc[R] = {};
        for (int c = lane; c < cols; c += 32)
#pragma unroll
            for (int r = 0; r < R; ++r) acc[r] += float(int8_t(rw.w[r][c])) * s_x[c];
        float sums[R];
#pragma unroll
        for (int r = 0; r < R; ++r) sums[r] = warp_sum(acc[r]) * x_scale * __ldg(rw.s[r]);  // the row's scale
        if (lane == 0) epilogue(g, sums);
    }
}

constexpr int k_dense_rows = 2;  // rows per warp in gemv_int8_kernel

template <typename W>
__global__ void __launch_bounds__(k_qwarps * 32) gemv_int8_kernel(GemvArgs a, int rows) {
    const uint64_t row_bytes = uint64_t(a.cols);
    auto locate = [&](int r, int& seg) {
        seg = 0;
        while (r >= a.seg[seg].rows) r -= a.seg[seg++].rows;
        return r;
    };
    auto rows_of = [&](int g, QRows<k_dense_rows>& rw) {
#pragma unroll
        for (int k = 0; k < k_dense_rows; ++k) {
            int seg;
            const int r = locate(min(g * k_dense_rows + k, rows - 1), seg);  // a missing last row reads the one before
            rw.w[k] = static_cast<const uint8_t*>(a.seg[seg].w) + r * row_bytes;
            rw.s[k] = a.seg[seg].scales + r;
        }
    };
    auto epilogue = [&](int g, const float (&dot)[k_dense_rows]) {
#pragma unroll
        for (int k = 0; k < k_dense_rows; ++k) {
            if (g * k_dense_rows + k >= rows) break;
            int seg;
            const int r = locate(g * k_dense_rows + k, seg);
            const GemvSegment& sg = a.seg[seg];
            const float b = sg.b ? to_float(static_cast<const W*>(sg.b)[r]) : 0.0f;
            sg.y[r] = (a.accumulate ? sg.y[r] : 0.0f) + dot[k] + b;
        }
    };
    int8_rows<k_dense_rows>((rows + k_dense_rows - 1) / k_dense_rows, a.cols, a.x, static_cast<const W*>(a.norm_w), a.norm_offset,
                            a.norm_eps, rows_of, epilogue);
}

struct GatedQuantArgs {
    const uint8_t *wg, *wu;
    const float *gs, *us;
    const void *bg, *bu, *norm_w;
    int rows, cols, group_size;
    const float* x;
    float offset, eps;
    GateAct act;
    float* y;
};

template <typename W>
__global__ void __launch_bounds__(k_qwarps * 32) gemv_gated_int8_kernel(GatedQuantArgs a) {
    const uint64_t row_bytes = uint64_t(a.cols);
    auto rows_of = [&](int r, QRows<2>& rw) {
        rw.w[0] = a.wg + r * row_bytes;
        rw.w[1] = a.wu + r * row_bytes;
        rw.s[0] = a.gs + r;
        rw.s[1] = a.us + r;
    };
    auto epilogue = [&](int r, const float (&gu)[2]) {
        const float g = gu[0] + (a.bg ? to_float(static_cast<const W*>(a.bg)[r]) : 0.0f);
        const float u = gu[1] + (a.bu ? to_float(static_cast<const W*>(a.bu)[r]) : 0.0f);
        a.y[r] = (a.act == GateAct::silu ? silu(g) : gelu_tanh(g)) * u;
    };
    int8_rows<2>(a.rows, a.cols, a.x, static_cast<const W*>(a.norm_w), a.offset, a.eps, rows_of, epilogue);
}

// ---- The tensor-core decode GEMV (m16n8k32: 8-bit integer inputs, exact s32 sums) ----
// The weights enter the tensor cores as signed bytes: INT8 as stored, INT4's nibble n = q + 8 as
// the byte 16 q = (n << 4) ^ 0x80 (one LOP3 for the odd columns, a shift and one for the even),
// where widening to f16 took about nine instructions per eight weights. x, staged once per block,
// is an integer X = round(x * 2^e) in signed base-256 digits, in the B operand's columns 2t and
// 2t + 1 for the k slots of quad lane t, zero elsewhere. Lane (g, t) then finds in c[0], c[1] (row
// g) and c[2], c[3] (row g + 8) the digit sums of exactly the 16 bytes of weights it loaded — one
// INT4 group of 32 (or part of a larger one), which it scales itself. So no weights move between
// lanes and the k order is free: each lane's A slots take its bytes in the order the widening
// produces them, and x is stored in that order.
// x (stage_x_groups): X below 2^14, e from each group of 32 columns' own max|x|, two digits
// X = d1 2^8 + d0. A lane joins each step's sums into d1 2^8 + d0 (one f32 rounding) and scales
// it by x's 2^-e for its columns (INT4: times the weights' group scale; INT8 applies its row scale
// once at the end).
// - INT4: a lane's 16 bytes of a step are 32 columns, one group; one MMA per word.
// - INT8: a lane's 16 bytes are 16 columns, half a group; one MMA per two words.
// x used to be four digits below 2^30 with e from the whole vector's max|x|: two MMAs per word
// and a block-wide max before any digit. Two digits decode the 8B INT4 4.5% faster on the H200,
// 2.6% on an H100 (2026-12-06). x is then held to 2^-14 of its group's largest element rather than
// 2^-30 of the vector's (docs/QUANTIZATION.md: the quantized kernel cases' bound is 5e-4 against
// the CPU reference).
// On the H200 this took the INT4 GEMVs of the 8B shapes from 94.7 to 90.5 us (head) and 27.2 to
// 25.3 us (gate+up) against the f16 tensor-core path it replaced (2026-12-05, bench/results/
// 2026-12-05-gemv-imma/README.md).
//
// A block (8 warps) takes a tile of 16 weight rows (gate and up: 8 rows of each, one output row
// per pair); lane (g, t) reads rows g and g + 8, bytes [64 s + 16 t, + 16) at step s; the warps
// split the steps and add up through shared memory. The first loads are issued before pdl_wait().
constexpr int k_mwarps = 8;   // warps per block: the MoE GEMVs always, the dense ones but INT4's wide rows (quant_mma_warps)
constexpr int k_step_bytes = 64;  // bytes of each row per step: four lanes of 16

// The position of column c within its block of 8 in the staged x: an INT4 word widens to the
// bytes of its even columns, then its odd ones (nib_lo, nib_hi), so x is stored in that order;
// INT8 in column order.
template <QuantScheme Q>
__device__ __forceinline__ int x_slot(int c) {
    if constexpr (Q == QuantScheme::int4) return (c & 1) ? 4 + (c >> 1) : c >> 1;
    else return c;
}
__device__ __forceinline__ uint32_t nib_lo(uint32_t w) { return ((w << 4) & 0xF0F0F0F0u) ^ 0x80808080u; }  // columns 0, 2, 4, 6
__device__ __forceinline__ uint32_t nib_hi(uint32_t w) { return (w & 0xF0F0F0F0u) ^ 0x80808080u; }         // columns 1, 3, 5, 7

// x's blocks of 8 columns as the stagings below read them: XB blocks per thread at a time (blocks
// b0, b0 + blockDim.x, ...), the loads of all of them (x and the pre-norm's weights) issued before
// any is used: those trips are long, queued behind the weights' first loads, and a wide x (down:
// 14336 columns, 7 blocks a thread) took 7 of them (H200, 2026-12-05: down INT8 24.95 -> 23.83 us,
// 8B INT8 decode +2.2%; bench/results/2026-12-05-h200-gemv-cfg). v[j]: block j's 8 values times
// the norm's weight (zero past cols, and for a block past the end); ss gains their squares unnormed.
template <int XB, typename W>
__device__ __forceinline__ void load_x_blocks(float (&v)[XB][8], int b0, int n_blocks, const float* x, int cols, const W* norm_w,
                                              float offset, float& ss) {
    constexpr int wvec = int(8 * sizeof(W) / 16);  // 16-byte pieces of 8 norm weights
    const bool vec = (reinterpret_cast<uintptr_t>(x) & 15) == 0;
    const bool wv = !norm_w || (reinterpret_cast<uintptr_t>(norm_w) & 15) == 0;
    int4 wraw[XB][wvec];  // the norm's weights as loaded: converted only after every load is issued
#pragma unroll
    for (int j = 0; j < XB; ++j) {
        const int c0 = 8 * (b0 + j * int(blockDim.x));
        const bool in = c0 < cols && b0 + j * int(blockDim.x) < n_blocks;
        if (in && vec) {
            const float4 p = __ldg(reinterpret_cast<const float4*>(x + c0)), q = __ldg(reinterpret_cast<const float4*>(x + c0 + 4));
            v[j][0] = p.x, v[j][1] = p.y, v[j][2] = p.z, v[j][3] = p.w, v[j][4] = q.x, v[j][5] = q.y, v[j][6] = q.z, v[j][7] = q.w;
        } else {
#pragma unroll
            for (int k = 0; k < 8; ++k) v[j][k] = in ? x[c0 + k] : 0.0f;
        }
        W* wr = reinterpret_cast<W*>(wraw[j]);
        if (norm_w && in && wv) {
#pragma unroll
            for (int k = 0; k < wvec; ++k) wraw[j][k] = __ldg(reinterpret_cast<const int4*>(norm_w + c0) + k);
        } else {
#pragma unroll
            for (int k = 0; k < 8; ++k) wr[k] = norm_w && in ? norm_w[c0 + k] : W{};
        }
    }
#pragma unroll
    for (int j = 0; j < XB; ++j) {
        const W* wr = reinterpret_cast<const W*>(wraw[j]);
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            ss += v[j][k] * v[j][k];
            if (norm_w) v[j][k] *= to_float(wr[k]) + offset;
        }
    }
}

// The power of two e that keeps X = round(x * 2^e) below 2^bits for |x| <= mx (bits 14: two
// digits, d1 in [-64, 64]), |e| <= 100 so that both 2^e and 2^-e are normal floats; 0 for mx = 0
// or not finite.
__device__ __forceinline__ int digits_exponent(float mx, int bits) {
    int E = 0;
    frexpf(mx, &E);  // mx < 2^E
    return mx > 0 && isfinite(mx) ? max(-100, min(100, bits - E)) : 0;
}

// Stages x (times the pre-norm weight when fused) as the two digits of X = round(x * 2^e) below
// 2^14, e from each group of 32 columns' own max|x| (4 blocks of 8: INT4 one lane's piece of a
// step, INT8 two lanes'; the lanes scale their sums themselves anyway); s_u[group] holds its 2^-e
// (NaN for a group with a NaN or an inf). 16 bytes per block of 8 columns (x_slot order): its 8
// d1, then its 8 d0 bytes.
// With no block-wide max to wait for, each thread writes its digits straight from the loads (no
// f32 parking, no second pass over shared memory, no block reduction). The 4 threads of a quad
// take a group's 4 blocks; every thread runs the same rounds, so the quad's shuffles see all four.
// Returns the RMS factor (1 without the norm).
template <QuantScheme Q, typename W>
__device__ float stage_x_groups(uint8_t* s_d, float* s_u, int kpad, const float* x, int cols, const W* norm_w, float offset,
                                float eps) {
    __shared__ float scratch[32];
    const int n_blocks = kpad / 8;  // a multiple of 8 (kpad: whole steps of 64 or 128 columns)
    float ss = 0;
    constexpr int XB = 2;
    for (int base = 0; base < n_blocks; base += XB * int(blockDim.x)) {
        float v[XB][8];
        const int b0 = base + int(threadIdx.x);
        load_x_blocks<XB>(v, b0, n_blocks, x, cols, norm_w, offset, ss);
#pragma unroll
        for (int j = 0; j < XB; ++j) {
            const int blk = b0 + j * int(blockDim.x);  // the quad's 4 blocks are all in or all out
            float mx = 0, nonfinite = 0;
            float o[8];
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                mx = fmaxf(mx, fabsf(v[j][k]));
                nonfinite = fmaf(v[j][k], 0.0f, nonfinite);  // fmaxf drops NaN; n * 0 keeps it (and inf's)
                o[x_slot<Q>(k)] = v[j][k];
            }
            if (!(nonfinite == 0.0f)) mx = INFINITY;
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            if (blk >= n_blocks) continue;
            const int e = digits_exponent(mx, 14);
            const float up = ldexpf(1.0f, e);
            uint32_t d[2][2] = {};
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                const int X = __float2int_rn(o[k] * up);
                const int d0 = int(int8_t(X));
                const int d1 = (X - d0) >> 8;
                d[0][k >> 2] |= uint32_t(d1 & 0xFF) << (8 * (k & 3));
                d[1][k >> 2] |= uint32_t(d0 & 0xFF) << (8 * (k & 3));
            }
            reinterpret_cast<uint4*>(s_d + 16 * blk)[0] = make_uint4(d[0][0], d[0][1], d[1][0], d[1][1]);
            if ((blk & 3) == 0) s_u[blk >> 2] = isfinite(mx) ? ldexpf(1.0f, -e) : __int_as_float(0x7fc00000);
        }
    }
    // block_sum's barriers also publish the digits; without the norm, one barrier does.
    if (!norm_w) {
        __syncthreads();
        return 1.0f;
    }
    return rsqrtf(block_sum(ss, scratch) / cols + eps);
}

// One warp's loads of MS steps (s0, s0 + NW, ...; NW warps a block): rows g and g + 8 (16 bytes each)
// and, INT4, their scales. Steps past the row load nothing (and are not computed). The addresses
// are the batch's base plus constants, and the scale's index a multiply: at INT4's rate the GEMV
// is bound by its instructions (ncu: issue slots busy 59% on the 8B head), and a step's offset,
// its 64-bit sums and a division by the group size per load and row were a third of them.
struct MmaLane {    // what a lane adds to a row's base, fixed for the launch
    int w_off;      // 16 t: the lane's piece of a step
    int s_off;      // INT4: the scale of that piece in the step, (2 * 16 t) >> log2(group)
    int s_step;     // INT4: scales per step, 128 >> log2(group) (a step is 128 weights)
    bool last_in;   // the lane's piece of the last step lies inside the row (rows of whole steps: always)
};
template <QuantScheme Q, int MS, int NW>
struct MmaBatch {
    int4 v[MS][2];
    float sc[MS][2];
    __device__ __forceinline__ void load(const uint8_t* const (&w)[2], const float* const (&s)[2], int s0, int n_steps,
                                         const MmaLane& ln) {
        const uint8_t* wb[2] = {w[0] + (s0 * k_step_bytes + ln.w_off), w[1] + (s0 * k_step_bytes + ln.w_off)};
        const float* sb[2] = {s[0] + (s0 * ln.s_step + ln.s_off), s[1] + (s0 * ln.s_step + ln.s_off)};
#pragma unroll
        for (int u = 0; u < MS; ++u) {
            const int st = s0 + NW * u;
            const bool in = st < n_steps - 1 || (st == n_steps - 1 && ln.last_in);
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                v[u][r] = in ? __ldg(reinterpret_cast<const int4*>(wb[r] + u * (NW * k_step_bytes))) : make_int4(0, 0, 0, 0);
                if constexpr (Q == QuantScheme::int4) sc[u][r] = in ? __ldg(sb[r] + u * NW * ln.s_step) : 0.0f;
            }
        }
    }
};

// The dot products of one batch (steps s0, s0 + NW, ...) into acc: each row's d1 2^8 + d0 sums of
// each step, times x's 2^-e for the lane's columns (xu[groups a step * step]) and, INT4, the
// weights' group scale. xb, xstep, xf: the lane's B operand in the staged x (mma_rows).
template <QuantScheme Q, int MS, int NW>
__device__ __forceinline__ void mma_batch(const MmaBatch<Q, MS, NW>& b, int s0, int n_steps, const uint8_t* xb, int xstep, int xf,
                                          const float* xu, float (&acc)[2]) {
#pragma unroll
    for (int u = 0; u < MS; ++u) {
        const int st = s0 + NW * u;
        if (st >= n_steps) break;  // uniform over the warp
        const uint8_t* xs = xb + st * xstep;
        const uint32_t* a0 = reinterpret_cast<const uint32_t*>(&b.v[u][0]);
        const uint32_t* a1 = reinterpret_cast<const uint32_t*>(&b.v[u][1]);
        if constexpr (Q == QuantScheme::int4) {
            int c[4] = {};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const uint2 bx = *reinterpret_cast<const uint2*>(xs + xf * 16 * i);
                const uint32_t fa[4] = {nib_lo(a0[i]), nib_lo(a1[i]), nib_hi(a0[i]), nib_hi(a1[i])};
                mma16832_s8(c, fa, bx.x, bx.y);
            }
            const float xg = xu[4 * st];  // x's 2^-e for the lane's 32 columns
#pragma unroll
            for (int r = 0; r < 2; ++r) acc[r] = fmaf(b.sc[u][r] * xg, float(c[2 * r] * 256 + c[2 * r + 1]), acc[r]);
        } else {
            // Two words of each row a k-step of 32, one block of 8 columns of x; the sums stay
            // below 16 * 127 * 128 per digit.
            int c[4] = {};
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                const uint2 bx = *reinterpret_cast<const uint2*>(xs + xf * 16 * i);
                const uint32_t fa[4] = {a0[2 * i], a1[2 * i], a0[2 * i + 1], a1[2 * i + 1]};
                mma16832_s8(c, fa, bx.x, bx.y);
            }
            const float xg = xu[2 * st];  // x's 2^-e for the lane's 16 columns
#pragma unroll
            for (int r = 0; r < 2; ++r) acc[r] = fmaf(xg, float(c[2 * r] * 256 + c[2 * r + 1]), acc[r]);
        }
    }
}

// The persistent tile loop: rows_of(tile, j, w, s) gives A row j's (0..15) base and scales;
// epilogue(tile, j, total) runs on threads j < 16 once the tile's sums are in shared memory
// (total(k): row k's dot with x, the pre-norm's RMS factor and, INT8, the row scale applied).
// A warp's work is a sequence of batches over the block's tiles; the next batch (the next tile's
// first, at a tile's end) is loaded before the current one is computed, so a warp always has
// loads in flight, also across the tile's reduction. PRELOAD: the first loads are issued before
// pdl_wait(); false when rows_of reads what the previous kernel wrote (the routed experts' bases).
//
// KR: tiles per reduction barrier. 1: each tile's sums meet in shared memory behind a barrier
// and a second barrier guards the buffer. KR > 1: the warps leave their sums in a ring of 2 KR
// tile slots and meet once every KR tiles (and after the block's last); behind that barrier 16
// threads a tile finish those tiles while the warps go on into the other half of the ring (whose
// readers finished before this barrier), so a tile costs 1 / KR barrier instead of 2.
template <QuantScheme Q, int MS, bool PRELOAD = true, int KR = 1, int NW = k_mwarps, typename W, typename RowsOf, typename Epilogue>
__device__ void mma_rows(int n_tiles, int cols, int group_size, const float* x, const W* norm_w, float offset, float eps,
                         RowsOf rows_of, Epilogue epilogue) {
    static_assert(KR >= 1 && 16 * KR <= NW * 32, "the epilogue takes 16 threads a tile");
    extern __shared__ int4 s_raw[];
    uint8_t* s_d = reinterpret_cast<uint8_t*>(s_raw);
    __shared__ float s_red[KR == 1 ? 1 : 2 * KR][NW][16];
    __shared__ int4 s_zero;  // the B operand of the lanes that hold none
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    constexpr int step_cols = Q == QuantScheme::int4 ? 2 * k_step_bytes : k_step_bytes;
    const int row_bytes = Q == QuantScheme::int4 ? cols / 2 : cols;
    const int n_steps = (row_bytes + k_step_bytes - 1) / k_step_bytes, kpad = n_steps * step_cols;
    // (Groups are 32, 64 or 128 weights: a power of two, so the scale indices are shifts.)
    const int group_shift = Q == QuantScheme::int4 ? __ffs(group_size) - 1 : 0;
    const MmaLane ln{16 * t, Q == QuantScheme::int4 ? (32 * t) >> group_shift : 0, Q == QuantScheme::int4 ? 128 >> group_shift : 0,
                     16 * t < row_bytes - (n_steps - 1) * k_step_bytes};
    // This warp's steps in a tile: warp, warp + NW, ...; in batches of MS.
    const int n_batches = n_steps > warp ? (n_steps - warp + NW * MS - 1) / (NW * MS) : 0;
    auto find_rows = [&](int tile, const uint8_t* (&w)[2], const float* (&s)[2]) {
        rows_of(tile, g, w[0], s[0]);
        rows_of(tile, g + 8, w[1], s[1]);
    };
    const uint8_t* w[2];
    const float* s[2];
    MmaBatch<Q, MS, NW> cur, next;
    auto start = [&] {
        if (int(blockIdx.x) >= n_tiles) return;
        find_rows(int(blockIdx.x), w, s);
        if (n_batches > 0) cur.load(w, s, warp, n_steps, ln);
    };
    if constexpr (PRELOAD) start();
    pdl_wait();  // x is the previous kernel's output
    pdl_launch_dependents();
    if constexpr (!PRELOAD) start();
    if (threadIdx.x == 0) s_zero = make_int4(0, 0, 0, 0);
    // Each group of 32 columns' 2^-e after the digits (mma_smem_bytes); lane t's group in step st
    // at xu[step_cols / 32 * st] (INT4: its own group; INT8: the group of lanes t and t ^ 1).
    float* s_u = reinterpret_cast<float*>(s_d + 2 * kpad);
    const float* xu = s_u + (Q == QuantScheme::int4 ? t : t >> 1);
    // INT4: the weights are 16 q; x's powers of two are applied per group, INT8's row scale last.
    const float unscale = Q == QuantScheme::int4 ? 1.0f / 16 : 1.0f;
    const float x_scale = stage_x_groups<Q>(s_d, s_u, kpad, x, cols, norm_w, offset, eps);
    // In the staged x, 16 bytes per block of 8 columns, a step is step_cols / 8 blocks and lane t's
    // piece starts t / 4 of a step in (INT4 4 blocks, INT8 2). Lane g feeds d1 when even, d0 when
    // odd. INT4: a word is one block; INT8: two words are one.
    const bool feeds = g / 2 == t;
    const uint8_t* xb = !feeds ? reinterpret_cast<const uint8_t*>(&s_zero) : s_d + 8 * (g & 1) + 16 * t * (step_cols / 32);
    const int xstep = feeds ? 2 * step_cols : 0, xf = feeds ? 1 : 0;
    int it = 0;  // this block's tiles so far
    for (int tile = blockIdx.x; tile < n_tiles; tile += gridDim.x, ++it) {
        float acc[2] = {};  // each row's sums, scaled
        const uint8_t* wn[2] = {w[0], w[1]};
        const float* sn[2] = {s[0], s[1]};
        for (int bi = 0; bi < n_batches; ++bi) {
            if (bi + 1 < n_batches) {
                next.load(w, s, warp + (bi + 1) * NW * MS, n_steps, ln);
            } else if (tile + int(gridDim.x) < n_tiles) {
                find_rows(tile + int(gridDim.x), wn, sn);
                next.load(wn, sn, warp, n_steps, ln);
            }
            mma_batch<Q, MS, NW>(cur, warp + bi * NW * MS, n_steps, xb, xstep, xf, xu, acc);
            cur = next;
        }
        if constexpr (Q == QuantScheme::int8)
#pragma unroll
            for (int r = 0; r < 2; ++r) acc[r] *= __ldg(s[r]);  // the row's scale
        if (n_batches == 0 && tile + int(gridDim.x) < n_tiles) find_rows(tile + int(gridDim.x), wn, sn);
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            w[r] = wn[r];
            s[r] = sn[r];
            acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], 1);
            acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], 2);
        }
        if constexpr (KR == 1) {
            if (t == 0) {
                s_red[0][warp][g] = acc[0];
                s_red[0][warp][g + 8] = acc[1];
            }
            __syncthreads();
            if (threadIdx.x < 16) {
                auto total = [&](int k) {
                    float v = 0;
                    for (int q = 0; q < NW; ++q) v += s_red[0][q][k];  // the same order for every row
                    return v * x_scale * unscale;
                };
                epilogue(tile, int(threadIdx.x), total);
            }
            __syncthreads();  // s_red is read before the next tile writes it
        } else {
            const int slot = it % (2 * KR);
            if (t == 0) {
                s_red[slot][warp][g] = acc[0];
                s_red[slot][warp][g + 8] = acc[1];
            }
            if ((it + 1) % KR == 0 || tile + int(gridDim.x) >= n_tiles) {
                __syncthreads();
                const int k = it % KR + 1;  // tiles since the last barrier
                if (int(threadIdx.x) < 16 * k) {
                    const int jt = it - k + 1 + int(threadIdx.x) / 16, sj = jt % (2 * KR);
                    auto total = [&](int r) {
                        float v = 0;
                        for (int q = 0; q < NW; ++q) v += s_red[sj][q][r];  // the same order for every row
                        return v * x_scale * unscale;
                    };
                    epilogue(int(blockIdx.x) + jt * int(gridDim.x), int(threadIdx.x) % 16, total);
                }
            }
        }
    }
}

template <QuantScheme Q, int MS, int KR, typename W, int NW = k_mwarps>
__global__ void __launch_bounds__(NW * 32, 16 / NW) gemv_mma_kernel(GemvArgs a, int rows) {
    const int row_bytes = Q == QuantScheme::int8 ? a.cols : a.cols / 2;
    const int row_scales = Q == QuantScheme::int8 ? 1 : a.cols / a.group_size;
    auto locate = [&](int r, int& seg) {
        seg = 0;
        while (r >= a.seg[seg].rows) r -= a.seg[seg++].rows;
        return r;
    };
    auto rows_of = [&](int tile, int j, const uint8_t*& w, const float*& s) {
        int seg;
        const int r = locate(min(tile * 16 + j, rows - 1), seg);  // rows past the end read the last (not stored)
        w = static_cast<const uint8_t*>(a.seg[seg].w) + size_t(r) * row_bytes;
        s = a.seg[seg].scales + size_t(r) * row_scales;
    };
    auto epilogue = [&](int tile, int j, auto total) {
        const int row = tile * 16 + j;
        if (row >= rows) return;
        int seg;
        const int r = locate(row, seg);
        const GemvSegment& sg = a.seg[seg];
        const float b = sg.b ? to_float(static_cast<const W*>(sg.b)[r]) : 0.0f;
        sg.y[r] = (a.accumulate ? sg.y[r] : 0.0f) + total(j) + b;
    };
    mma_rows<Q, MS, true, KR, NW>((rows + 15) / 16, a.cols, a.group_size, a.x, static_cast<const W*>(a.norm_w), a.norm_offset, a.norm_eps, rows_of,
                epilogue);
}

template <QuantScheme Q, int MS, int KR, typename W, int NW = k_mwarps>
__global__ void __launch_bounds__(NW * 32, 16 / NW) gemv_gated_mma_kernel(GatedQuantArgs a) {
    const int row_bytes = Q == QuantScheme::int8 ? a.cols : a.cols / 2;
    const int row_scales = Q == QuantScheme::int8 ? 1 : a.cols / a.group_size;
    auto rows_of = [&](int tile, int j, const uint8_t*& w, const float*& s) {  // A rows 0..7: gate, 8..15: up
        const int r = min(tile * 8 + (j & 7), a.rows - 1);
        w = (j < 8 ? a.wg : a.wu) + size_t(r) * row_bytes;
        s = (j < 8 ? a.gs : a.us) + size_t(r) * row_scales;
    };
    auto epilogue = [&](int tile, int j, auto total) {
        const int r = tile * 8 + j;
        if (j >= 8 || r >= a.rows) return;
        const float g = total(j) + (a.bg ? to_float(static_cast<const W*>(a.bg)[r]) : 0.0f);
        const float u = total(j + 8) + (a.bu ? to_float(static_cast<const W*>(a.bu)[r]) : 0.0f);
        a.y[r] = (a.act == GateAct::silu ? silu(g) : gelu_tanh(g)) * u;
    };
    mma_rows<Q, MS, true, KR, NW>((a.rows + 7) / 8, a.cols, a.group_size, a.x, static_cast<const W*>(a.norm_w), a.offset, a.eps, rows_of, epilogue);
}

// The routed experts (moe.cu) on quantized blocks. Gate and up: a virtual matrix of top_k * ffn
// row pairs, tiles as gemv_gated_mma_kernel's, expert j's rows found through the base the router
// wrote (so no load before pdl_wait).
template <QuantScheme Q, int MS, int KR, typename W>
__global__ void __launch_bounds__(k_mwarps * 32, 2) moe_gated_mma_kernel(MoeGemvArgs a) {
    const int rows = a.top_k * a.ffn, cols = a.hidden;
    const size_t row_bytes = Q == QuantScheme::int8 ? size_t(cols) : size_t(cols / 2);
    const size_t row_scales = Q == QuantScheme::int8 ? 1 : size_t(cols / a.group_size);
    auto rows_of = [&](int tile, int j, const uint8_t*& w, const float*& s) {  // A rows 0..7: gate, 8..15: up
        const int r = min(tile * 8 + (j & 7), rows - 1), e = r / a.ffn, i = r - e * a.ffn;
        const uint8_t* base = static_cast<const uint8_t*>(a.experts[e]);
        w = base + (j < 8 ? 0 : a.up_offset) + size_t(i) * row_bytes;
        s = reinterpret_cast<const float*>(base + (j < 8 ? a.gate_scales : a.up_scales)) + size_t(i) * row_scales;
    };
    auto epilogue = [&](int tile, int j, auto total) {
        const int r = tile * 8 + j;
        if (j >= 8 || r >= rows) return;
        const float g = total(j), u = total(j + 8);
        a.act_out[r] = (a.act == GateAct::silu ? silu(g) : gelu_tanh(g)) * u;
    };
    mma_rows<Q, MS, false, KR>((rows + 7) / 8, cols, a.group_size, a.x, static_cast<const W*>(a.norm_w), a.norm_offset, a.norm_eps,
                           rows_of, epilogue);
}

// Down: expert blockIdx.y's [hidden, ffn] rows against its own act_out row, the tiles of one
// expert spread over gridDim.x blocks.
template <QuantScheme Q, int MS, int KR, typename W>
__global__ void __launch_bounds__(k_mwarps * 32, 2) moe_down_mma_kernel(MoeGemvArgs a) {
    const int e = int(blockIdx.y), rows = a.hidden, cols = a.ffn;
    const size_t row_bytes = Q == QuantScheme::int8 ? size_t(cols) : size_t(cols / 2);
    const size_t row_scales = Q == QuantScheme::int8 ? 1 : size_t(cols / a.group_size);
    auto rows_of = [&](int tile, int j, const uint8_t*& w, const float*& s) {
        const int r = min(tile * 16 + j, rows - 1);
        const uint8_t* base = static_cast<const uint8_t*>(a.experts[e]);
        w = base + a.down_offset + size_t(r) * row_bytes;
        s = reinterpret_cast<const float*>(base + a.down_scales) + size_t(r) * row_scales;
    };
    auto epilogue = [&](int tile, int j, auto total) {
        const int r = tile * 16 + j;
        if (r < rows) a.partial[size_t(e) * rows + r] = total(j);
    };
    mma_rows<Q, MS, false, KR>((rows + 15) / 16, cols, a.group_size, a.act_out + size_t(e) * cols, static_cast<const W*>(nullptr), 0.0f,
                           0.0f, rows_of, epilogue);
}

// Whether the rows can be read in 16-byte pieces (INT4 rows always are whole pieces: cols is a
// multiple of the group, itself of 32; the pointers must be aligned).
bool quant_vectorizable(QuantScheme q, int cols, std::initializer_list<const void*> ptrs) {
    return vectorizable(int(quant_row_bytes(q, cols)), 1, ptrs);
}

void check_layout(QuantScheme q, int cols, int group_size, bool vec, const char* who) {
    if (q == QuantScheme::int4 && (!int4_group_size_allowed(group_size) || cols % group_size != 0 || !vec))
        fail("{}: INT4 rows of {} weights in groups of {} must be whole 16-byte-aligned groups of 32, 64 or 128", who, cols,
             group_size);
}

template <typename K, typename... Args>
void launch_persistent(K kernel, int n_groups, int cols, cudaStream_t s, Args&&... args) {
    const size_t smem = size_t(cols) * sizeof(float);  // x, staged
    const int per_block = k_qwarps;
    const unsigned grid = unsigned(std::min((n_groups + per_block - 1) / per_block, resident_blocks(kernel, smem, k_qwarps)));
    launch(kernel, grid, k_qwarps * 32, smem, s, std::forward<Args>(args)...);
}

// The tensor-core GEMV's grid: a block per tile, at most as many as fit at once; its shared
// memory holds x's two digits per column, padded to whole steps, and a power of two per group of
// 32 columns.
size_t mma_smem_bytes(QuantScheme q, int cols) {
    const int row_bytes = q == QuantScheme::int4 ? cols / 2 : cols;
    const int n_steps = (row_bytes + k_step_bytes - 1) / k_step_bytes;
    const size_t kpad = size_t(n_steps) * (q == QuantScheme::int4 ? 2 * k_step_bytes : k_step_bytes);
    return kpad * 2 + kpad / 32 * sizeof(float);
}

template <typename K, typename... Args>
void launch_mma(K kernel, int warps, QuantScheme q, int n_tiles, int cols, cudaStream_t s, Args&&... args) {
    const size_t smem = mma_smem_bytes(q, cols);
    const unsigned grid = unsigned(std::min(n_tiles, resident_blocks(kernel, smem, warps)));
    launch(kernel, grid, warps * 32, smem, s, std::forward<Args>(args)...);
}

// Steps (two 16-byte loads per lane) per batch of the tensor-core GEMV, its template parameter
// MS; two batches are in flight. Measured on the H200 (bench/results/2026-12-05-gemv-imma/): INT8
// runs best with 3 (head 138.1 us against 146.3 with 2), INT4 with 2 (head 90.5 against 94.1).
// With INT8's x in two digits (2026-12-07, H100) 3 still wins: the 8B INT8 decodes 297.6 tok/s
// against 270.2 with 2 (bench/results/2026-12-07-h100-three-patches/).
// TT_QUANT_MMA_STEPS=2|3 forces one for an A/B.
int quant_mma_steps(QuantScheme q) {
    static const int forced = env_int("TT_QUANT_MMA_STEPS", 0);
    if (forced == 2 || forced == 3) return forced;
    return q == QuantScheme::int4 ? 2 : 3;
}

// Tiles per reduction barrier of the dense GEMVs (mma_rows' KR). Measured on the H100
// (bench/results/2026-12-05-h100-quant-red/): 4 takes INT4's 8B decode from 356.8 to 361.7 tok/s
// (gate+up 36.4 -> 35.4 us), INT8's from 283.4 to 282.5, so INT4 meets every 4 tiles and INT8
// every tile; TT_QUANT_RED_TILES=1|4 forces one for an A/B.
int quant_red_tiles(QuantScheme q) {
    static const int forced = env_int("TT_QUANT_RED_TILES", 0);
    if (forced == 1 || forced == 4) return forced;
    return q == QuantScheme::int4 ? 4 : 1;
}

// Warps per block of the dense GEMVs: 8 (two blocks an SM) or 16 (one block an SM, so x is staged
// half as often). 16 only for INT4 rows of 8192 columns or more (the 8B's down). Measured on the
// H100 (bench/results/2026-12-05-h100-gemv-warps/): 16 warps everywhere took that down from 22.2 to
// 20.7 us in INT4 and from 28.9 to 27.2 in INT8, but the 4096-column shapes up by as much as 15%
// (INT8 gate+up). With 16 on the wide rows only, on the H200 (bench/results/
// 2026-12-06-h200-gemv-warps-xbulk/): INT4 decode 460.4 -> 469.8 tok/s (+2.0%), INT8 352.5 ->
// 349.0 (-1.0%, though its down kernel alone went from 24.1 to 22.4 us), so INT8 keeps 8.
// TT_QUANT_MMA_WARPS=8|16 forces one everywhere for an A/B.
int quant_mma_warps(QuantScheme q, int cols) {
    static const std::string knob = [] {
        const char* e = std::getenv("TT_QUANT_MMA_WARPS");
        return std::string(e ? e : "");
    }();
    if (knob != "" && knob != "8" && knob != "16") fail("TT_QUANT_MMA_WARPS={}: expected 8 or 16", knob);
    if (knob == "16") return 16;
    if (knob == "8") return k_mwarps;
    return q == QuantScheme::int4 && cols >= 8192 ? 16 : k_mwarps;
}

template <QuantScheme Q, template <QuantScheme, int, int, typename, int> class K, typename W, typename Go>
void pick_mma(int cols, Go&& go) {
    const int ms = quant_mma_steps(Q), kr = quant_red_tiles(Q);
    // 16 warps are compiled for the default batch and reduction only (forcing others picks 8).
    constexpr int dms = Q == QuantScheme::int4 ? 2 : 3, dkr = Q == QuantScheme::int4 ? 4 : 1;
    if (quant_mma_warps(Q, cols) == 16 && ms == dms && kr == dkr) go(K<Q, dms, dkr, W, 16>::kernel, 16);
    else if (ms == 2 && kr == 1) go(K<Q, 2, 1, W, k_mwarps>::kernel, k_mwarps);
    else if (ms == 2) go(K<Q, 2, 4, W, k_mwarps>::kernel, k_mwarps);
    else if (kr == 1) go(K<Q, 3, 1, W, k_mwarps>::kernel, k_mwarps);
    else go(K<Q, 3, 4, W, k_mwarps>::kernel, k_mwarps);
}
template <QuantScheme Q, int MS, int KR, typename W, int NW>
struct DenseMma {
    static constexpr auto kernel = gemv_mma_kernel<Q, MS, KR, W, NW>;
};
template <QuantScheme Q, int MS, int KR, typename W, int NW>
struct GatedMma {
    static constexpr auto kernel = gemv_gated_mma_kernel<Q, MS, KR, W, NW>;
};

template <typename T>
__global__ void dequantize_kernel(const uint8_t* q, const float* scales, QuantScheme quant, int group_size, int rows, int cols,
                                  T* out) {
    // Eight consecutive weights of a row per thread (cols % 8 == 0, checked by the caller): 8 or 4
    // bytes in, 8 values out.
    const int per_row = cols / 8;
    const size_t n = size_t(rows) * per_row;
    for (size_t t = size_t(blockIdx.x) * blockDim.x + threadIdx.x; t < n; t += size_t(gridDim.x) * blockDim.x) {
        const size_t r = t / per_row;
        const int c0 = int(t % per_row) * 8;
        float v[8];
        if (quant == QuantScheme::int8) {
            const uint2 b = *reinterpret_cast<const uint2*>(q + r * size_t(cols) + c0);
            const float sc = scales[r];
#pragma unroll
            for (int k = 0; k < 8; ++k) v[k] = __fmul_rn(float(int8_t(((k < 4 ? b.x : b.y) >> (8 * (k & 3))) & 0xFF)), sc);
        } else {
            const uint32_t b = *reinterpret_cast<const uint32_t*>(q + r * size_t(cols / 2) + c0 / 2);
            const float sc = scales[r * size_t(cols / group_size) + c0 / group_size];
#pragma unroll
            for (int k = 0; k < 8; ++k) v[k] = __fmul_rn(float(int((b >> (4 * k)) & 0xF) - 8), sc);
        }
        T o[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) o[k] = from_float<T>(v[k]);
        if constexpr (sizeof(T) == 2) *reinterpret_cast<int4*>(out + r * size_t(cols) + c0) = *reinterpret_cast<const int4*>(o);
        else
#pragma unroll
            for (int k = 0; k < 8; ++k) out[r * size_t(cols) + c0 + k] = o[k];
    }
}

}  // namespace

void gemv_quant(const GemvArgs& a, cudaStream_t s) {
    if (a.post_norm || a.y_mul || a.pending.y)
        fail("gemv: quantized weights take no fused post-norm, gated output or pending residual (settle them apart)");
    int rows = 0;
    bool vec = true;
    for (int i = 0; i < a.n_seg; ++i) {
        rows += a.seg[i].rows;
        vec = vec && quant_vectorizable(a.quant, a.cols, {a.seg[i].w});
        if (!a.seg[i].scales) fail("gemv: a quantized segment without scales");
    }
    check_layout(a.quant, a.cols, a.group_size, vec, "gemv");
    const int n_tiles = (rows + 15) / 16;
    TT_DISPATCH_FLOAT(a.wdt, W, {
        auto go = [&](auto kernel, int nw) { launch_mma(kernel, nw, a.quant, n_tiles, a.cols, s, a, rows); };
        if (a.quant == QuantScheme::int4) {
            pick_mma<QuantScheme::int4, DenseMma, W>(a.cols, go);
        } else if (vec) {
            pick_mma<QuantScheme::int8, DenseMma, W>(a.cols, go);
        } else {
            launch_persistent(gemv_int8_kernel<W>, (rows + k_dense_rows - 1) / k_dense_rows, a.cols, s, a, rows);
        }
    });
    TT_CUDA_LAUNCH_CHECK();
}

void gemv_gated_quant(const void* wg, const void* wu, const float* gs, const float* us, QuantScheme quant, int group_size,
                      const void* bg, const void* bu, DType wdt, int rows, int cols, const float* x, const void* norm_w,
                      float norm_offset, float norm_eps, GateAct act, float* y, cudaStream_t s) {
    if (!gs || !us) fail("gemv_gated: quantized gate and up without scales");
    const bool vec = quant_vectorizable(quant, cols, {wg, wu});
    check_layout(quant, cols, group_size, vec, "gemv_gated");
    GatedQuantArgs a{static_cast<const uint8_t*>(wg), static_cast<const uint8_t*>(wu), gs, us, bg, bu, norm_w, rows, cols,
                     group_size, x, norm_offset, norm_eps, act, y};
    const int n_tiles = (rows + 7) / 8;
    TT_DISPATCH_FLOAT(wdt, W, {
        auto go = [&](auto kernel, int nw) { launch_mma(kernel, nw, quant, n_tiles, cols, s, a); };
        if (quant == QuantScheme::int4) {
            pick_mma<QuantScheme::int4, GatedMma, W>(cols, go);
        } else if (vec) {
            pick_mma<QuantScheme::int8, GatedMma, W>(cols, go);
        } else {
            launch_persistent(gemv_gated_int8_kernel<W>, rows, cols, s, a);
        }
    });
    TT_CUDA_LAUNCH_CHECK();
}

// note: the experts' bases live on the device and cannot be checked here; the archive aligns every
// expert block to 4 KiB, and the offsets inside a block (all 16-byte aligned) are checked here.
void moe_check_layout(const MoeGemvArgs& a, const char* who) {
    const bool offsets = a.up_offset % 16 == 0 && a.down_offset % 16 == 0 && a.gate_scales % 4 == 0 && a.up_scales % 4 == 0 &&
                         a.down_scales % 4 == 0;
    for (int cols : {a.hidden, a.ffn}) {
        const bool vec = offsets && quant_vectorizable(a.quant, cols, {});
        if (a.quant == QuantScheme::int8 && !vec)
            fail("{}: INT8 expert rows of {} weights are not whole 16-byte pieces (hidden {}, expert ffn {})", who, cols, a.hidden, a.ffn);
        check_layout(a.quant, cols, a.group_size, vec, who);
    }
}

// (The batch sizes are the dense GEMVs' defaults, quant_mma_steps.)
void moe_gemv_gated_quant(const MoeGemvArgs& a, cudaStream_t s) {
    moe_check_layout(a, "moe_gemv_gated");
    const int n_tiles = (a.top_k * a.ffn + 7) / 8;
    TT_DISPATCH_FLOAT(a.wdt, W, {
        if (a.quant == QuantScheme::int4) launch_mma(moe_gated_mma_kernel<QuantScheme::int4, 2, 1, W>, k_mwarps, a.quant, n_tiles, a.hidden, s, a);
        else launch_mma(moe_gated_mma_kernel<QuantScheme::int8, 3, 1, W>, k_mwarps, a.quant, n_tiles, a.hidden, s, a);
    });
    TT_CUDA_LAUNCH_CHECK();
}

void moe_gemv_down_quant(const MoeGemvArgs& a, cudaStream_t s) {
    moe_check_layout(a, "moe_gemv_down");
    const int n_tiles = (a.hidden + 15) / 16;
    const size_t smem = mma_smem_bytes(a.quant, a.ffn);
    auto go = [&](auto kernel) {
        // The resident blocks shared among the top_k experts, each expert's tiles over its row of blocks.
        const int per_expert = std::max(1, std::min(n_tiles, resident_blocks(kernel, smem, k_mwarps) / a.top_k));
        launch(kernel, dim3(unsigned(per_expert), unsigned(a.top_k)), k_mwarps * 32, smem, s, a);
    };
    TT_DISPATCH_FLOAT(a.wdt, W, {
        if (a.quant == QuantScheme::int4) go(moe_down_mma_kernel<QuantScheme::int4, 2, 1, W>);
        else go(moe_down_mma_kernel<QuantScheme::int8, 3, 1, W>);
    });
    TT_CUDA_LAUNCH_CHECK();
}

void dequantize(const void* q, const float* scales, QuantScheme quant, int group_size, int rows, int cols, void* out,
                DType out_dt, cudaStream_t s) {
    if (quant == QuantScheme::none || cols % 8 != 0 || (quant == QuantScheme::int4 && cols % group_size != 0))
        fail("dequantize: {} rows of {} weights (groups of {}) are not whole pieces of 8", quant_scheme_label(quant), cols,
             group_size);
    if (rows == 0) return;
    const size_t n = size_t(rows) * size_t(cols / 8);
    const unsigned grid = unsigned(std::min<size_t>((n + 255) / 256, 65535));
    TT_DISPATCH_FLOAT(out_dt, T,
                      dequantize_kernel<T><<<grid, 256, 0, s>>>(static_cast<const uint8_t*>(q), scales, quant, group_size, rows,
                                                                cols, static_cast<T*>(out)));
    TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::cuda
