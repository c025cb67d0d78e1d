// One attention head's q or k vector prepared by one warp: bias, per-head RMSNorm (Qwen3, Gemma 3),
// then RoPE in transformers' rotate_half layout. Shared by the prefill kernel (rope.cu) and the
// fused decode attention (attention.cu), so the two paths round identically. One warp per head
// lets a block prepare several heads at once: the decode attention's latency is a chain of such
// steps, and doing the heads one after another with block-wide reductions cost ~10 us per layer.
#pragma once

#include "backends/cuda/kernels/common.cuh"

#include <cstdint>
#include <type_traits>

namespace tt::cuda {

// Called by all 32 lanes of a warp. hv: [hd] shared memory, written here (visible to the warp on
// return); src: the projection output (f32); bias/norm: [hd] slices in the weight dtype or null.
template <typename W>
__device__ void prepare_head(float* hv, const float* src, const W* bias, const W* norm, float norm_offset, float eps,
                             int hd, const float* inv_freq, int rotary_dim, float attention_factor, int pos) {
    const int lane = threadIdx.x & 31;
    float ss = 0;
    for (int d = lane; d < hd; d += 32) {
        const float v = src[d] + (bias ? to_float(bias[d]) : 0.0f);
        hv[d] = v;
        ss += v * v;
    }
    if (norm) {
        const float inv = rsqrtf(warp_sum(ss) / hd + eps);
        for (int d = lane; d < hd; d += 32) hv[d] = hv[d] * inv * (to_float(norm[d]) + norm_offset);
    }
    __syncwarp();
    const int half = rotary_dim / 2;
    for (int i = lane; i < half; i += 32) {
        float sn, cs;
        sincosf(float(pos) * inv_freq[i], &sn, &cs);
        cs *= attention_factor;
        sn *= attention_factor;
        const float x1 = hv[i], x2 = hv[i + half];
        hv[i] = x1 * cs - x2 * sn;
        hv[i + half] = x2 * cs + x1 * sn;
    }
    __syncwarp();
}

// What prepare_head reads that the step's previous kernel does not write, for head_dim HD, in one
// lane's registers: the q and k norms' weights plus norm_offset at d = lane + 32 j, and RoPE's cos
// and sin times attention_factor at i = lane + 32 j < rotary_dim / 2 — prepare_head's own values.
// The decode attention takes them before pdl_wait: after it, a head is then one trip to L2 (its
// projection) instead of three in series (the projection; after the sum, the norm's weights; then
// inv_freq, and sincosf).
template <int HD>
struct HeadConsts {
    float qn[HD / 32], kn[HD / 32];
    float cs[HD / 64], sn[HD / 64];
};
template <typename W, int HD>
__device__ __forceinline__ HeadConsts<HD> head_consts(const W* q_norm, const W* k_norm, float norm_offset, const float* inv_freq,
                                                      int rotary_dim, float attention_factor, int pos) {
    const int lane = threadIdx.x & 31;
    HeadConsts<HD> c;
#pragma unroll
    for (int j = 0; j < HD / 32; ++j) {
        c.qn[j] = q_norm ? to_float(q_norm[lane + 32 * j]) + norm_offset : 0.0f;
        c.kn[j] = k_norm ? to_float(k_norm[lane + 32 * j]) + norm_offset : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < HD / 64; ++j) {
        const int i = lane + 32 * j;
        float sn = 0.0f, cs = 0.0f;
        if (i < rotary_dim / 2) sincosf(float(pos) * inv_freq[i], &sn, &cs);
        c.cs[j] = cs * attention_factor;
        c.sn[j] = sn * attention_factor;
    }
    return c;
}

// prepare_head with the norm's weights (the q norm's when is_q, else the k norm's; none when
// !norm) and RoPE's cos and sin from c: the same arithmetic in the same order, so the same values.
// The projection (and bias) loads are the only trips, issued together.
template <typename W, int HD>
__device__ __forceinline__ void prepare_head(float* hv, const float* src, const W* bias, const HeadConsts<HD>& c, bool is_q,
                                             bool norm, float eps, int rotary_dim) {
    const int lane = threadIdx.x & 31;
    float v[HD / 32];
    float ss = 0;
#pragma unroll
    for (int j = 0; j < HD / 32; ++j) {
        const int d = lane + 32 * j;
        v[j] = src[d] + (bias ? to_float(bias[d]) : 0.0f);
        ss += v[j] * v[j];
    }
    if (norm) {
        const float inv = rsqrtf(warp_sum(ss) / HD + eps);
#pragma unroll
        for (int j = 0; j < HD / 32; ++j) v[j] = v[j] * inv * (is_q ? c.qn[j] : c.kn[j]);
    }
#pragma unroll
    for (int j = 0; j < HD / 32; ++j) hv[lane + 32 * j] = v[j];
    __syncwarp();
    const int half = rotary_dim / 2;
#pragma unroll
    for (int j = 0; j < HD / 64; ++j) {
        const int i = lane + 32 * j;
        if (i < half) {
            const float x1 = hv[i], x2 = hv[i + half];
            hv[i] = x1 * c.cs[j] - x2 * c.sn[j];
            hv[i + half] = x2 * c.cs[j] + x1 * c.sn[j];
        }
    }
    __syncwarp();
}

// One row of the 8-bit KV cache (runtime/kv_cache_type.h) written by one warp: value(d) for d < hd
// as INT8 with one f32 scale, rounded as the CPU's quantize_row (core/quant.h): scale = max|x| / 127,
// q = round_half_even(x / scale) clamped to +-127, 0 where the scale is 0 — true divisions.
template <typename F>
__device__ void write_int8_row(int8_t* q, float* scale, int hd, F value) {
    const int lane = threadIdx.x & 31;
    float amax = 0;
    for (int d = lane; d < hd; d += 32) amax = fmaxf(amax, fabsf(value(d)));
    const float s = __fdiv_rn(warp_max(amax), 127.0f);
    for (int d = lane; d < hd; d += 32) q[d] = int8_t(s == 0.0f ? 0 : max(-127, min(127, __float2int_rn(__fdiv_rn(value(d), s)))));
    if (lane == 0) *scale = s;
}

// One KV head's cache rows at one position, written by one warp: k from the prepared head hk
// (shared memory), v = vsrc (+ bias), through Gemma 4's unweighted RMSNorm when v_norm. KV int8_t:
// the 8-bit cache, each row's scale to *ks / *vs (unused otherwise). v_out (or null): v in f32 as
// well, before any rounding, for a decode attention block that puts the row into its own tile
// instead of reading it back from the cache.
template <typename W, typename KV>
__device__ void write_kv_head(KV* kc, KV* vc, const float* hk, const float* vsrc, const W* bv, int hd, bool v_norm, float eps,
                              float* ks = nullptr, float* vs = nullptr, float* v_out = nullptr) {
    const int lane = threadIdx.x & 31;
    float inv = 1.0f;
    if (v_norm) {
        float ss = 0;
        for (int d = lane; d < hd; d += 32) {
            const float v = vsrc[d] + (bv ? to_float(bv[d]) : 0.0f);
            ss += v * v;
        }
        inv = rsqrtf(warp_sum(ss) / hd + eps);
    }
    auto v_at = [&](int d) {
        const float v = vsrc[d] + (bv ? to_float(bv[d]) : 0.0f);
        return v_norm ? v * inv : v;
    };
    if constexpr (std::is_same_v<KV, int8_t>) {
        write_int8_row(kc, ks, hd, [&](int d) { return hk[d]; });
        write_int8_row(vc, vs, hd, v_at);
        if (v_out)
            for (int d = lane; d < hd; d += 32) v_out[d] = v_at(d);
    } else {
        for (int d = lane; d < hd; d += 32) {
            const float v = v_at(d);
            kc[d] = from_float<KV>(hk[d]);
            vc[d] = from_float<KV>(v);
            if (v_out) v_out[d] = v;
        }
    }
}

}  // namespace tt::cuda
