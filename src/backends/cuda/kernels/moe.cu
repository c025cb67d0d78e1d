// Mixture-of-experts FFN kernels: the router (softmax + top-k per token), the decode GEMVs over
// the selected experts, the weighted combine into the residual stream (with a shared expert's
// gated output, whose products are the dense GEMV/GEMM kernels'), and the row gather of the
// prefill. The expert GEMVs are the persistent GEMV of gemv.cuh over a "virtual" matrix that
// stacks the top_k selected experts: its rows are read through base pointers the router wrote to
// device memory, so one CUDA graph serves every selection (the pointers change, the launch does
// not); quantized expert blocks take quant.cu's tensor-core GEMV the same way. Every kernel calls
// pdl_wait() before it reads what an earlier kernel wrote (launch.h).
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/gemv.cuh"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/launch.cuh"

#include "core/error.h"

#include <climits>

namespace tt::cuda {

namespace {

// ---- routing ----

constexpr int k_route_warps = 4;  // token rows per block, one warp each

// The probability softmax gives a logit, as the ranking sees it: NaN (NaN or all -inf logits)
// ranks below every number, as -1, so the picks stay in range and the pointer lookup never reads
// outside the table.
__device__ __forceinline__ float route_rank(float logit, float mx, float sum) {
    const float p = expf(logit - mx) / sum;
    return p == p ? p : -1.0f;
}

// One warp per token row. The top_k are found by top_k passes of a warp-wide argmax, each pass
// taking the best expert that ranks after the previous pick in the order (probability descending,
// index ascending): no per-row storage, so any n_experts works, and equal probabilities come out
// lowest index first, as torch.topk and cpu::moe_route order them. note: the probabilities are
// recomputed in each pass (top_k * n_experts / 32 expf per lane: 32 for 128 experts, top 8) by
// the same expression, so equal logits give bit-equal probabilities in every pass.
__global__ void __launch_bounds__(k_route_warps * 32)
    moe_route_kernel(const float* logits, int n, int n_experts, int top_k, bool norm_topk, int32_t* ids, float* weights,
                     const void* const* table, const void** ptrs) {
    pdl_wait();
    pdl_launch_dependents();
    const int lane = threadIdx.x & 31, t = blockIdx.x * k_route_warps + int(threadIdx.x >> 5);
    if (t >= n) return;  // the whole warp: t is uniform over it
    const float* l = logits + size_t(t) * n_experts;
    // routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
    float mx = -INFINITY;
    for (int e = lane; e < n_experts; e += 32) mx = fmaxf(mx, l[e]);
    mx = warp_max(mx);
    float sum = 0;
    for (int e = lane; e < n_experts; e += 32) sum += expf(l[e] - mx);
    sum = warp_sum(sum);
    // routing_weights, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    float prev_p = INFINITY, kept = 0;
    int prev_e = -1;
    int32_t* row_ids = ids + size_t(t) * top_k;
    float* row_w = weights + size_t(t) * top_k;
    for (int j = 0; j < top_k; ++j) {
        float best_p = -2.0f;  // below every rank
        int best_e = INT_MAX;
        for (int e = lane; e < n_experts; e += 32) {  // ascending e: strict > keeps the lowest index among equals
            const float p = route_rank(l[e], mx, sum);
            const bool after_prev = p < prev_p || (p == prev_p && e > prev_e);
            if (after_prev && p > best_p) {
                best_p = p;
                best_e = e;
            }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float op = __shfl_xor_sync(0xffffffffu, best_p, o);
            const int oe = __shfl_xor_sync(0xffffffffu, best_e, o);
            if (op > best_p || (op == best_p && oe < best_e)) {
                best_p = op;
                best_e = oe;
            }
        }
        prev_p = best_p;
        prev_e = best_e;
        const float w = best_p >= 0 ? best_p : NAN;
        kept += w;  // in pick order, as the CPU reference sums
        if (lane == (j & 31)) {
            row_ids[j] = best_e;
            row_w[j] = w;
            if (table) ptrs[size_t(t) * top_k + j] = table[best_e];
        }
    }
    // if self.norm_topk_prob: routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
    // (pick j was stored by lane j % 32: the same thread reads it back)
    if (norm_topk)
        for (int j = lane; j < top_k; j += 32) row_w[j] /= kept;
}

// ---- expert GEMVs ----

// Warps per block: the measured default of the dense GEMVs (gemv.cu's gemv_warps()).
constexpr int k_moe_warps = 16;

// note: the selected experts' row pointers come from the router, the kernel just before, so the
// GEMVs cannot issue weight loads ahead of pdl_wait() (stream_rows' PRELOAD = false): the prologue
// overlap the dense GEMVs get under PDL is lost here, one router launch's worth.

// act_out[r] for the virtual rows r = j * ffn + i: expert j's gate and up row i against the
// normalized x (staged once per block, as gemv_gated).
template <typename W, bool VECTOR, bool SLICED>
__global__ void __launch_bounds__(k_moe_warps * 32) moe_gated_kernel(MoeGemvArgs a, int kslices) {
    const int ffn = a.ffn, hidden = a.hidden;
    auto rows_of = [&](int r, const W* (&w)[2]) {  // void: every expert reads the same x
        const int j = r / ffn, i = r - j * ffn;
        const char* base = static_cast<const char*>(a.experts[j]);
        w[0] = reinterpret_cast<const W*>(base) + size_t(i) * hidden;
        w[1] = reinterpret_cast<const W*>(base + a.up_offset) + size_t(i) * hidden;
    };
    auto epilogue = [&](int r, const float (&gu)[2]) {
        a.act_out[r] = (a.act == GateAct::silu ? silu(gu[0]) : gelu_tanh(gu[0])) * gu[1];
    };
    stream_rows<W, VECTOR, 2, true, SLICED, k_moe_warps, false, false>(a.top_k * ffn, hidden, kslices, a.x,
                                                                       static_cast<const W*>(a.norm_w), a.norm_offset,
                                                                       a.norm_eps, PendingResidual{}, rows_of, epilogue);
}

// partial[r] for the virtual rows r = j * hidden + i: expert j's down row i against act_out[j].
// R consecutive rows of one expert per warp (hidden % R == 0): an expert's down rows are short
// (ffn = 768 for Qwen3-30B-A3B), so one row alone leaves a lane few loads to keep in flight. The
// input differs per expert, so x is read from global memory (top_k * ffn floats, L1/L2-resident).
// Two blocks per SM, as the dense gemv_kernel's default: without the bound the bf16 kernel takes
// 65 registers and one block per SM, half the warps to keep loads in flight (with it, ptxas
// spills a few bytes of the R = 2 vector path: unmeasured which costs more).
template <typename W, bool VECTOR, bool SLICED, int R>
__global__ void __launch_bounds__(k_moe_warps * 32, 2) moe_down_kernel(MoeGemvArgs a, int kslices) {
    const int ffn = a.ffn, hidden = a.hidden;
    auto rows_of = [&](int g, const W* (&w)[R]) {
        const int r0 = g * R, j = r0 / hidden, i = r0 - j * hidden;
        const W* d = reinterpret_cast<const W*>(static_cast<const char*>(a.experts[j]) + a.down_offset) + size_t(i) * ffn;
#pragma unroll
        for (int k = 0; k < R; ++k) w[k] = d + size_t(k) * ffn;
        return j * ffn;  // expert j's input: act_out[j, :]
    };
    auto epilogue = [&](int g, const float (&dot)[R]) {
#pragma unroll
        for (int k = 0; k < R; ++k) a.partial[size_t(g) * R + k] = dot[k];
    };
    stream_rows<W, VECTOR, R, false, SLICED, k_moe_warps, false, true>(a.top_k * hidden / R, ffn, kslices, a.act_out,
                                                                      static_cast<const W*>(nullptr), 0.0f, 0.0f,
                                                                      PendingResidual{}, rows_of, epilogue);
}

// The launch of one expert-GEMV kernel family: kernel_of(vector, sliced) picks the instantiation.
template <typename KernelOf>
void moe_launch(const MoeGemvArgs& a, KernelOf kernel_of, int rows, int cols, size_t elem, bool vec, size_t smem,
                cudaStream_t s) {
    auto k = kernel_of(vec, false);
    const int ks = kslices_for(rows, cols, elem, vec, resident_blocks(k, smem, k_moe_warps), k_moe_warps);
    if (ks > 1) k = kernel_of(true, true);
    launch(k, grid_for(rows, ks, resident_blocks(k, smem, k_moe_warps), k_moe_warps), k_moe_warps * 32, smem, s, a, ks);
}

template <typename W, int R>
void down_launch(const MoeGemvArgs& a, bool vec, cudaStream_t s) {
    auto kernel_of = [](bool v, bool sliced) {
        return !v ? moe_down_kernel<W, false, false, R> : sliced ? moe_down_kernel<W, true, true, R> : moe_down_kernel<W, true, false, R>;
    };
    moe_launch(a, kernel_of, a.top_k * a.hidden / R, a.ffn, sizeof(W), vec, 0, s);
}

// ---- combine and gather ----

// One thread per (token, element): the top_k terms in pick order, the shared expert's term, then
// one add into x (transformers adds the shared expert's output to the routed sum, then the
// decoder layer adds the whole to the residual).
__global__ void moe_combine_kernel(float* x, const float* y, const int32_t* rows, const float* weights, int top_k,
                                   int hidden, const float* shared, const float* shared_logit) {
    pdl_wait();
    pdl_launch_dependents();
    const int t = blockIdx.x, h = blockIdx.y * blockDim.x + threadIdx.x;
    if (h >= hidden) return;
    float acc = 0;
    for (int j = 0; j < top_k; ++j) {
        const int k = t * top_k + j;
        const int row = rows ? rows[k] : k;
        acc += weights[k] * y[size_t(row) * hidden + h];
    }
    if (shared) {
        // shared_expert_output = F.sigmoid(self.shared_expert_gate(hidden_states)) * shared_expert_output
        const float g = shared_logit ? 1.0f / (1.0f + expf(-shared_logit[t])) : 1.0f;
        acc += g * shared[size_t(t) * hidden + h];
    }
    x[size_t(t) * hidden + h] += acc;
}

// Row i of dst is row idx[i] of src, copied in units U (int4 when rows and pointers allow).
template <typename U>
__global__ void gather_rows_kernel(const U* src, const int32_t* idx, int units, U* dst) {
    pdl_wait();
    pdl_launch_dependents();
    const U* from = src + size_t(idx[blockIdx.x]) * units;
    U* to = dst + size_t(blockIdx.x) * units;
    for (int c = blockIdx.y * blockDim.x + threadIdx.x; c < units; c += gridDim.y * blockDim.x) to[c] = from[c];
}

template <typename U>
void gather_launch(const void* src, const int32_t* idx, int m, size_t row_bytes, void* dst, cudaStream_t s) {
    const int units = int(row_bytes / sizeof(U)), threads = 256;
    const unsigned chunks = unsigned(std::min((units + threads - 1) / threads, 65535));
    launch(gather_rows_kernel<U>, dim3(unsigned(m), chunks), threads, 0, s, static_cast<const U*>(src), idx, units,
           static_cast<U*>(dst));
}

bool aligned(const void* p, size_t to) { return reinterpret_cast<uintptr_t>(p) % to == 0; }

}  // namespace

void moe_route(const float* logits, int n, int n_experts, int top_k, bool norm_topk, int32_t* ids, float* weights,
               const void* const* table, const void** ptrs, cudaStream_t s) {
    TT_ASSERT(top_k >= 1 && top_k <= n_experts, "moe_route: top_k {} of {} experts", top_k, n_experts);
    if (n <= 0) return;
    launch(moe_route_kernel, unsigned((n + k_route_warps - 1) / k_route_warps), k_route_warps * 32, 0, s, logits, n,
           n_experts, top_k, norm_topk, ids, weights, table, ptrs);
    TT_CUDA_LAUNCH_CHECK();
}

// note: the expert blocks' base addresses live on the device and cannot be checked here; the
// vector path assumes them 16-byte aligned (the .thin archive aligns every block to 4 KiB) and
// checks what the host knows: row lengths and the offsets inside a block.
void moe_gemv_gated(const MoeGemvArgs& a, cudaStream_t s) {
    if (a.quant != QuantScheme::none) return moe_gemv_gated_quant(a, s);
    const size_t smem = size_t(a.hidden) * sizeof(float);
    TT_DISPATCH_FLOAT(a.wdt, W, {
        const bool vec = vectorizable(a.hidden, sizeof(W), {}) && a.up_offset % 16 == 0;
        auto kernel_of = [](bool v, bool sliced) {
            return !v ? moe_gated_kernel<W, false, false> : sliced ? moe_gated_kernel<W, true, true> : moe_gated_kernel<W, true, false>;
        };
        moe_launch(a, kernel_of, a.top_k * a.ffn, a.hidden, sizeof(W), vec, smem, s);
    });
    TT_CUDA_LAUNCH_CHECK();
}

void moe_gemv_down(const MoeGemvArgs& a, cudaStream_t s) {
    if (a.quant != QuantScheme::none) return moe_gemv_down_quant(a, s);
    TT_DISPATCH_FLOAT(a.wdt, W, {
        // act_out rows are read as float4 at j * ffn: vectorizable(ffn) makes ffn a multiple of 4.
        const bool vec = vectorizable(a.ffn, sizeof(W), {a.act_out}) && a.down_offset % 16 == 0;
        if (a.hidden % 2 == 0) down_launch<W, 2>(a, vec, s);
        else down_launch<W, 1>(a, vec, s);
    });
    TT_CUDA_LAUNCH_CHECK();
}

void moe_combine(float* x, const float* y, const int32_t* rows, const float* weights, int n, int top_k, int hidden,
                 const float* shared, const float* shared_logit, cudaStream_t s) {
    if (n <= 0) return;
    const int threads = 256;
    launch(moe_combine_kernel, dim3(unsigned(n), unsigned((hidden + threads - 1) / threads)), threads, 0, s, x, y, rows,
           weights, top_k, hidden, shared, shared_logit);
    TT_CUDA_LAUNCH_CHECK();
}

void gather_rows(const void* src, const int32_t* idx, int m, int cols, DType dt, void* dst, cudaStream_t s) {
    if (m <= 0) return;
    const size_t row_bytes = size_t(cols) * dtype_size(dt);
    auto fits = [&](size_t unit) { return row_bytes % unit == 0 && aligned(src, unit) && aligned(dst, unit); };
    if (fits(16)) gather_launch<int4>(src, idx, m, row_bytes, dst, s);
    else if (fits(4)) gather_launch<uint32_t>(src, idx, m, row_bytes, dst, s);
    else if (fits(2)) gather_launch<uint16_t>(src, idx, m, row_bytes, dst, s);
    else gather_launch<uint8_t>(src, idx, m, row_bytes, dst, s);
    TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::cuda
