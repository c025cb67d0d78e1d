// The host decode path (issue #16): decoder layers computed on the CPU one token at a time, from
// weights in host memory (the archive's mapping) and a KV cache in host memory, built to run at
// the host's memory bandwidth (host/gemv.h, all cores of the pool). The CUDA backend runs the
// layers the planner puts on the CPU (Placement::cpu) through it, beside the weights it streams
// over PCIe; the host backend (--device host, host_backend.h) runs a whole model through it. The
// readable reference (src/backends/cpu/) stays the oracle it is tested against
// (tests/unit/test_host_layers.cpp).
#pragma once

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "model/model_spec.h"
#include "model/weights.h"
#include "runtime/rope.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace tt::host {

class HostLayers {
public:
    // Layers `layers` (indices into spec.layers; the others are never touched) with a KV cache of
    // n_ctx positions each in kv_dt (f32/f16/bf16), laid out [position][kv_dim] like the CUDA
    // backend's cache so rows copy across unchanged; or i8, the 8-bit KV cache
    // (runtime/kv_cache_type.h): the INT8 values so laid out, and an f32 scale per position and
    // KV head beside them, [n_ctx, n_kv_heads] as CUDA's scale arrays, so they copy across too.
    // Every layer's cache has the model-wide kv_dim (the planner gives the CPU no layer of another
    // width). `pool` is used for every parallel loop.
    HostLayers(const ModelSpec& spec, const ModelWeights& w, std::vector<int> layers, int n_ctx, DType kv_dt, ThreadPool& pool);

    // x[hidden] (f32) += decoder layer il at position pos for one token: its k/v row is written
    // to the cache at pos and attention reads positions [first, pos] (the sliding window).
    void forward(int il, float* x, int pos);

    bool has(int il) const;
    // Layer il's cache rows (for copies to and from the GPU's cache: CUDA prefill computes these layers).
    void* k_cache(int il);
    void* v_cache(int il);
    size_t kv_row_bytes() const;  // kv_dim x sizeof(kv_dt) (an 8-bit cache's values only)
    // An 8-bit cache's row scales of layer il, [n_ctx, n_kv_heads] f32 (null for a float cache):
    // they cross the bus with the rows.
    float* k_scale(int il);
    float* v_scale(int il);
    size_t kv_scale_row_bytes() const;  // n_kv_heads x 4 for an 8-bit cache, else 0
    // Weight bytes one decode token reads from layer il (its dense block, or router + top_k experts).
    uint64_t decode_bytes(int il) const;

    // Products (and attention) of fewer multiply-adds than this run on the calling thread instead
    // of the pool (default k_min_parallel, host::gemv's rule); tests set 0 to run tiny models
    // through the pool's split.
    void set_min_parallel(int64_t n) { min_parallel_ = n; }
    static constexpr int64_t k_min_parallel = int64_t(1) << 16;

    HostLayers(const HostLayers&) = delete;
    HostLayers& operator=(const HostLayers&) = delete;
    ~HostLayers();

private:
    // One layer this object computes: its weights, its norm weights and biases widened to f32 once
    // (they are read every token), and its KV cache.
    struct Layer {
        LayerWeights w;
        bool sliding = false, moe = false;
        std::vector<float> attn_norm, q_norm, k_norm, attn_post_norm, ffn_norm, ffn_post_norm;
        std::vector<float> bq, bk, bv, bo, b_gate, b_up, b_down;  // empty when the model has none
        // [n_ctx, kv_dim] in kv_dt, page-aligned (a caller may register it with the GPU driver) and
        // not cleared: attention reads only positions written before.
        uint8_t* k_cache = nullptr;
        uint8_t* v_cache = nullptr;
        std::unique_ptr<float[]> k_scale, v_scale;  // an 8-bit cache's: [n_ctx, n_kv_heads]
    };
    // One matrix-vector product of a dispatch: y (+)= w x, or for a gated MLP's first half
    // y = act(w x + b) * (w_up x + b_up) with u as scratch for the up rows.
    struct Product {
        const TensorView* w = nullptr;
        const float* x = nullptr;
        float* y = nullptr;
        bool accumulate = false;
        const TensorView* w_up = nullptr;  // gated: the up matrix (w is the gate)
        const float* b = nullptr;          // gated: the biases, or null
        const float* b_up = nullptr;
        float* u = nullptr;                // gated: [rows] scratch for up
    };
    // Per parallel attention slot (one per pool thread): its scores and one head's q, k and v.
    struct AttnScratch {
        std::vector<float> scores, q, k, v;
        std::vector<float> p_scaled;  // an 8-bit cache: each probability times its value row's scale
        std::vector<uint8_t> kq, vq;  // an 8-bit cache: this token's k and v head rows as INT8
    };

    const Layer& layer(int il) const;
    // Runs the products in one pool dispatch, their rows in blocks of k_block spread over the threads.
    void run_products(const std::vector<Product>& products);
    void attention(const Layer& L, int pos);
    // The attention of query head hh at pos (slot scratch sc): prepares q, and the head's k/v row at
    // pos (stored into the cache by the first query head of its group), then attends.
    void attend_head(const Layer& L, int hh, int pos, AttnScratch& sc);
    void dense_ffn(const Layer& L, float* x);
    // x += post_norm(W in + b) (the o and down projections; post_norm: Gemma's sandwich norm, or null)
    void add_projection(const TensorView* w, const float* in, const std::vector<float>& b, const std::vector<float>* post_norm,
                        float* x);
    void moe_ffn(const Layer& L, float* x);

    ModelSpec spec_;
    ThreadPool& pool_;
    int n_ctx_ = 0;
    DType kv_dt_ = DType::f32;
    RopeTable rope_, rope_local_;
    std::vector<int> slot_of_;          // [n_layers]: index into layers_, -1 when not computed here
    std::vector<Layer> layers_;
    std::vector<uint64_t> decode_bytes_;  // [n_layers]
    int64_t min_parallel_ = k_min_parallel;
    // Scratch, sized once in the constructor.
    std::vector<float> h_;              // [hidden]: the normalized input of the next products
    std::vector<float> qkv_;            // [q_dim + 2 kv_dim]: the raw q, k, v projections
    std::vector<float> att_;            // [q_dim]: the attention output
    std::vector<float> tmp_;            // [hidden]: a projection before its post-norm, the MoE sum
    std::vector<float> gate_, up_;      // [dense ffn, or top_k x expert_ffn + shared_ffn]
    std::vector<float> expert_out_;     // [(top_k + 1) x hidden]: each chosen expert's down output
    std::vector<float> router_;         // [n_experts + 1]: router logits, then the shared expert's gate logit
    std::vector<int32_t> route_ids_;    // [top_k]
    std::vector<float> route_weights_;  // [top_k]
    std::vector<Product> products_;     // the products of the dispatch being built (capacity reserved)
    std::vector<AttnScratch> attn_;     // [min(pool size, n_heads)]
};

}  // namespace tt::host
