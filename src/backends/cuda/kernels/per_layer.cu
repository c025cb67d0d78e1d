// Gemma 4's per-layer inputs (transformers' Gemma4TextModel.get_per_layer_inputs /
// project_per_layer_inputs, and the per-layer block at the end of Gemma4TextDecoderLayer): the
// combine of the projected token embedding with the per-layer table's row, and the gated product
// each layer feeds its per_layer_projection. The projections themselves are GEMVs / GEMMs.
#include "backends/cuda/kernels/dispatch.cuh"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/launch.cuh"

namespace tt::cuda {

namespace {

// One warp per (token, layer) slice of P values. The table row is read straight from registered
// host memory (over the bus): each slice is P contiguous elements, one coalesced read per warp.
template <typename W>
__global__ void per_layer_inputs_kernel(PerLayerInputArgs a) {
    pdl_wait();  // after the projection's GEMV / GEMM
    pdl_launch_dependents();
    const int warps = blockDim.x >> 5, lane = threadIdx.x & 31;
    const int slice = blockIdx.x * warps + (threadIdx.x >> 5);
    if (slice >= a.n * a.n_layers) return;
    const int t = slice / a.n_layers, l = slice % a.n_layers, P = a.per_layer_dim, LP = a.n_layers * P;
    float* p = a.proj + size_t(t) * LP + size_t(l) * P;
    const W* row = static_cast<const W*>(a.table) + size_t(a.ids[t]) * LP + size_t(l) * P;
    const W* w = static_cast<const W*>(a.norm_w);
    // per_layer_projection * hidden_size ** -0.5, then per_layer_projection_norm over P
    float ss = 0;
    for (int i = lane; i < P; i += 32) {
        const float v = p[i] * a.proj_scale;
        ss += v * v;
    }
    const float inv = rsqrtf(warp_sum(ss) / P + a.norm_eps);
    for (int i = lane; i < P; i += 32) {
        const float v = p[i] * a.proj_scale * inv * (to_float(w[i]) + a.norm_offset);
        // (projection + embed_tokens_per_layer(ids) * sqrt(P)) * 2 ** -0.5
        p[i] = (v + to_float(row[i]) * a.table_scale) * a.input_scale;
    }
}

// out[t, i] = act(g[t, i]) * pli[t * ld_pli + i] (f32 in, out in out_dt).
template <typename O>
__global__ void per_layer_gate_act_kernel(const float* g, const float* pli, int ld_pli, int P, GateAct act, O* out) {
    pdl_wait();  // after the gate's GEMV / GEMM
    pdl_launch_dependents();
    const size_t t = blockIdx.y;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < P; i += gridDim.x * blockDim.x) {
        const float gv = g[t * P + i];
        out[t * P + i] = from_float<O>((act == GateAct::silu ? silu(gv) : gelu_tanh(gv)) * pli[t * size_t(ld_pli) + i]);
    }
}

}  // namespace

void per_layer_inputs(const PerLayerInputArgs& a, cudaStream_t s) {
    if (a.n <= 0) return;
    constexpr int warps = 8;
    const int64_t slices = int64_t(a.n) * a.n_layers;
    TT_DISPATCH_FLOAT(a.wdt, W, launch(per_layer_inputs_kernel<W>, unsigned((slices + warps - 1) / warps), 32 * warps, 0, s, a));
    TT_CUDA_LAUNCH_CHECK();
}

void per_layer_gate_act(const float* g, const float* pli, int ld_pli, int n, int per_layer_dim, GateAct act, void* out,
                        DType out_dt, cudaStream_t s) {
    if (n > 65535) fail("per_layer_gate_act: {} rows exceed the grid's 65535", n);
    const dim3 grid(unsigned((per_layer_dim + 255) / 256), unsigned(n));
    TT_DISPATCH_FLOAT(out_dt, O, launch(per_layer_gate_act_kernel<O>, grid, 256, 0, s, g, pli, ld_pli, per_layer_dim, act,
                                        static_cast<O*>(out)));
    TT_CUDA_LAUNCH_CHECK();
}

}  // namespace tt::cuda
