// The host decode path's decoder layer (host_layers.h): the CPU reference's per-layer step
// (backends/cpu/cpu_backend.cpp) for one token, in the same order of operations, with every weight
// product on the host GEMV kernels (gemv.h) split over the pool, and the pool dispatched as few
// times as the data dependencies allow:
//   1. q, k and v projections (one dispatch over the rows of the three matrices);
//   2. attention, parallel over query heads: each head prepares its q and its group's new k/v row
//      (bias, q/k norm, RoPE, the kv_dt rounding of the cache), the group's first head stores that
//      row, and every head attends over the cache;
//   3. the o projection (adding into the residual unless a post-norm comes first);
//   4. gate and up together, the activation applied per block of rows (MoE: every chosen expert
//      and the shared expert in the same dispatch, after a router dispatch);
//   5. down (MoE: the chosen experts' down rows and their weighted sum, block by block).
// Norms, residual adds and routing run on the calling thread: they are O(hidden).
#include "backends/host/host_layers.h"

#include "backends/cpu/moe.h"
#include "backends/cpu/ops.h"
#include "backends/host/gemv.h"
#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace tt::host {

namespace {

// Rows per block of a dispatch: a multiple of the kernels' four rows per pass, small enough to
// balance the threads, large enough that each worker reads contiguous weight rows.
constexpr int64_t k_block = 16;

int64_t n_blocks(int64_t rows) { return (rows + k_block - 1) / k_block; }

// fn over [0, n) on the pool, or on the calling thread when the work is too small to pay for the
// dispatch.
// note: the pool takes a std::function, which would allocate for a lambda with many captures;
// wrapping a reference to fn keeps it in std::function's inline storage (no allocation per token).
template <typename Fn>
void dispatch(ThreadPool& pool, size_t n, int64_t work, int64_t min_parallel, const Fn& fn) {
    if (n == 0) return;
    if (work < min_parallel || pool.size() == 1) fn(size_t(0), n);
    else pool.parallel_for(n, [&fn](size_t b, size_t e) { fn(b, e); });
}

std::vector<float> widen(const TensorView* t) {
    if (!t) return {};
    std::vector<float> out(static_cast<size_t>(t->numel()));
    to_f32(t->data, t->dtype, out.data(), out.size());
    return out;
}

const float* or_null(const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); }

// x[0:n] rounded to dt and widened back: the value a kv_dt cache row holds.
void round_to(float* x, int n, DType dt) {
    if (dt == DType::bf16)
        for (int i = 0; i < n; ++i) x[i] = bf16_to_f32(f32_to_bf16(x[i]));
    else if (dt == DType::f16)
        for (int i = 0; i < n; ++i) x[i] = f16_to_f32(f32_to_f16(x[i]));
}

// A tensor's bytes, a quantized matrix's scales included (a decode token reads both).
uint64_t bytes_of(const TensorView* t) {
    if (!t) return 0;
    if (t->quant == QuantScheme::none) return t->nbytes;
    return t->nbytes + uint64_t(t->shape[0]) * 4 * uint64_t(quant_row_scales(t->quant, t->shape[1], t->group_size));
}

// Every tensor of the layer but its routed experts.
uint64_t layer_bytes_without_experts(const LayerWeights& L) {
    uint64_t b = 0;
    for (const TensorView* t : {L.attn_norm, L.wq, L.wk, L.wv, L.wo, L.bq, L.bk, L.bv, L.bo, L.q_norm, L.k_norm,
                                L.attn_post_norm, L.ffn_norm, L.ffn_post_norm, L.w_gate, L.w_up, L.w_down, L.b_gate,
                                L.b_up, L.b_down, L.router, L.shexp_gate, L.shexp_up, L.shexp_down, L.shexp_gate_inp})
        b += bytes_of(t);
    return b;
}

// The KV cache: page-aligned, so a caller may register it with a GPU driver for copies.
uint8_t* alloc_cache(size_t bytes) {
    const size_t page = 4096;
    void* p = std::aligned_alloc(page, std::max(page, (bytes + page - 1) / page * page));
    if (!p) fail("cannot allocate {} bytes for the host KV cache", bytes);
    return static_cast<uint8_t*>(p);
}

}  // namespace

HostLayers::HostLayers(const ModelSpec& spec, const ModelWeights& w, std::vector<int> layers, int n_ctx, DType kv_dt,
                       ThreadPool& pool)
    : spec_(spec), pool_(pool), n_ctx_(n_ctx), kv_dt_(kv_dt), rope_(make_rope_table(spec.rope)),
      rope_local_(make_rope_table(spec.rope_local)) {
    const ModelSpec& s = spec_;
    TT_ASSERT(n_ctx > 0, "host layers with a context of {}", n_ctx);
    TT_ASSERT(kv_dt == DType::f32 || kv_dt == DType::f16 || kv_dt == DType::bf16 || kv_dt == DType::i8, "a {} KV cache",
              dtype_name(kv_dt));
    TT_ASSERT(int(w.layers.size()) == s.n_layers);
    slot_of_.assign(size_t(s.n_layers), -1);
    decode_bytes_.resize(size_t(s.n_layers));
    for (int il = 0; il < s.n_layers; ++il) {
        const LayerWeights& L = w.layers[size_t(il)];
        uint64_t b = layer_bytes_without_experts(L);
        if (s.is_moe(il) && !L.experts.empty()) {
            const ExpertWeights& e = L.experts.front();
            b += uint64_t(s.moe.top_k) * (bytes_of(e.gate) + bytes_of(e.up) + bytes_of(e.down));
        }
        decode_bytes_[size_t(il)] = b;
    }

    const size_t kv_bytes = size_t(n_ctx) * kv_row_bytes();
    layers_.reserve(layers.size());
    for (int il : layers) {
        TT_ASSERT(il >= 0 && il < s.n_layers, "layer {} of {}", il, s.n_layers);
        TT_ASSERT(slot_of_[size_t(il)] < 0, "layer {} given twice", il);
        TT_ASSERT(s.layers[size_t(il)].mixer == MixerKind::attention);
        TT_ASSERT(s.layer_head_dim(il) == s.head_dim && s.layer_n_kv_heads(il) == s.n_kv_heads,
                  "layer {}: its KV rows are not the model-wide width", il);
        slot_of_[size_t(il)] = int(layers_.size());
        Layer& y = layers_.emplace_back();
        const LayerWeights& L = w.layers[size_t(il)];
        y.w = L;
        y.sliding = s.sliding(il);
        y.moe = s.is_moe(il);
        y.attn_norm = widen(L.attn_norm);
        y.q_norm = widen(s.qk_norm ? L.q_norm : nullptr);
        y.k_norm = widen(s.qk_norm ? L.k_norm : nullptr);
        y.attn_post_norm = widen(s.sandwich_norm ? L.attn_post_norm : nullptr);
        y.ffn_norm = widen(L.ffn_norm);
        y.ffn_post_norm = widen(s.sandwich_norm ? L.ffn_post_norm : nullptr);
        y.bq = widen(L.bq);
        y.bk = widen(L.bk);
        y.bv = widen(L.bv);
        y.bo = widen(L.bo);
        y.b_gate = widen(L.b_gate);
        y.b_up = widen(L.b_up);
        y.b_down = widen(L.b_down);
        y.k_cache = alloc_cache(kv_bytes);
        y.v_cache = alloc_cache(kv_bytes);
        if (kv_dt == DType::i8) {
            y.k_scale = std::make_unique<float[]>(size_t(n_ctx) * size_t(s.n_kv_heads));
            y.v_scale = std::make_unique<float[]>(size_t(n_ctx) * size_t(s.n_kv_heads));
        }
    }

    const size_t H = size_t(s.hidden_dim), K = size_t(std::max(s.moe.top_k, 0));
    h_.resize(H);
    qkv_.resize(size_t(s.q_dim()) + 2 * size_t(s.kv_dim()));
    att_.resize(size_t(s.q_dim()));
    tmp_.resize(H);
    size_t gated = size_t(s.ffn_dim);
    if (s.has_moe()) gated = std::max(gated, K * size_t(s.moe.expert_ffn_dim) + size_t(s.moe.shared_ffn_dim));
    gate_.resize(gated);
    up_.resize(gated);
    if (s.has_moe()) {
        expert_out_.resize((K + 1) * H);
        router_.resize(size_t(s.moe.n_experts) + 1);
        route_ids_.resize(K);
        route_weights_.resize(K);
    }
    products_.reserve(2 * K + 4);
    attn_.resize(size_t(std::min(pool_.size(), s.n_heads)));
    for (AttnScratch& a : attn_) {
        a.scores.resize(size_t(n_ctx));
        a.q.resize(size_t(s.head_dim));
        a.k.resize(size_t(s.head_dim));
        a.v.resize(size_t(s.head_dim));
        if (kv_dt == DType::i8) {
            a.p_scaled.resize(size_t(n_ctx));
            a.kq.resize(size_t(s.head_dim));
            a.vq.resize(size_t(s.head_dim));
        }
    }
}

HostLayers::~HostLayers() {
    for (Layer& L : layers_) {
        std::free(L.k_cache);
        std::free(L.v_cache);
    }
}

bool HostLayers::has(int il) const { return il >= 0 && il < int(slot_of_.size()) && slot_of_[size_t(il)] >= 0; }

const HostLayers::Layer& HostLayers::layer(int il) const {
    TT_ASSERT(has(il), "layer {} is not computed on the host", il);
    return layers_[size_t(slot_of_[size_t(il)])];
}

void* HostLayers::k_cache(int il) { return layer(il).k_cache; }
void* HostLayers::v_cache(int il) { return layer(il).v_cache; }
size_t HostLayers::kv_row_bytes() const { return size_t(spec_.kv_dim()) * dtype_size(kv_dt_); }
float* HostLayers::k_scale(int il) { return layer(il).k_scale.get(); }
float* HostLayers::v_scale(int il) { return layer(il).v_scale.get(); }
size_t HostLayers::kv_scale_row_bytes() const { return kv_dt_ == DType::i8 ? size_t(spec_.n_kv_heads) * sizeof(float) : 0; }

uint64_t HostLayers::decode_bytes(int il) const {
    TT_ASSERT(il >= 0 && il < spec_.n_layers);
    return decode_bytes_[size_t(il)];
}

void HostLayers::run_products(const std::vector<Product>& products) {
    int64_t blocks = 0, work = 0;
    for (const Product& p : products) {
        blocks += n_blocks(p.w->shape[0]);
        work += p.w->shape[0] * p.w->shape[1] * (p.w_up ? 2 : 1);
    }
    const Activation act = spec_.activation;
    dispatch(pool_, size_t(blocks), work, min_parallel_, [&](size_t b0, size_t b1) {
        // The products' blocks are numbered one after another; this share is [b0, b1).
        int64_t first = 0;
        for (const Product& p : products) {
            const int64_t rows = p.w->shape[0], nb = n_blocks(rows);
            const int64_t lo = std::max(int64_t(b0), first), hi = std::min(int64_t(b1), first + nb);
            if (lo < hi) {
                const int64_t r0 = (lo - first) * k_block, r1 = std::min(rows, (hi - first) * k_block);
                gemv_rows(*p.w, p.x, p.y, r0, r1, p.accumulate, best_isa());
                if (p.w_up) {
                    // down_proj's input: act_fn(gate_proj(x)) * up_proj(x)
                    gemv_rows(*p.w_up, p.x, p.u, r0, r1, false, best_isa());
                    for (int64_t r = r0; r < r1; ++r) {
                        const float g = p.y[r] + (p.b ? p.b[r] : 0.0f), u = p.u[r] + (p.b_up ? p.b_up[r] : 0.0f);
                        p.y[r] = (act == Activation::silu ? cpu::silu(g) : cpu::gelu_tanh(g)) * u;
                    }
                }
            }
            first += nb;
        }
    });
}

void HostLayers::forward(int il, float* x, int pos) {
    const ModelSpec& s = spec_;
    const Layer& L = layer(il);
    TT_ASSERT(pos >= 0 && pos < n_ctx_, "position {} outside the host KV cache of {}", pos, n_ctx_);
    const int H = s.hidden_dim, Q = s.q_dim(), KV = s.kv_dim();

    // hidden_states = self.input_layernorm(hidden_states)
    cpu::rmsnorm_f32(x, L.attn_norm.data(), s.norm_weight_offset, s.norm_eps, h_.data(), H);
    // q/k/v = self.q_proj(hidden_states) ... (biases are added with the norms, per head)
    products_.clear();
    products_.push_back({L.w.wq, h_.data(), qkv_.data()});
    products_.push_back({L.w.wk, h_.data(), qkv_.data() + Q});
    products_.push_back({L.w.wv, h_.data(), qkv_.data() + Q + KV});
    run_products(products_);

    attention(L, pos);

    // attn_output = self.o_proj(attn_output); hidden_states = residual + hidden_states
    // (Gemma: hidden_states = self.post_attention_layernorm(hidden_states) before the add)
    add_projection(L.w.wo, att_.data(), L.bo, s.sandwich_norm ? &L.attn_post_norm : nullptr, x);

    // hidden_states = self.post_attention_layernorm(hidden_states)  (Gemma: pre_feedforward_layernorm)
    cpu::rmsnorm_f32(x, L.ffn_norm.data(), s.norm_weight_offset, s.norm_eps, h_.data(), H);
    if (L.moe) moe_ffn(L, x);
    else dense_ffn(L, x);
}

void HostLayers::attention(const Layer& L, int pos) {
    const ModelSpec& s = spec_;
    const int first = L.sliding ? std::max(0, pos - s.sliding_window + 1) : 0;
    const size_t n_slots = attn_.size();
    // Slot i (one per thread) takes query heads [i n_heads / n_slots, (i + 1) n_heads / n_slots):
    // consecutive heads share their KV head's rows.
    const int64_t work = int64_t(s.n_heads) * int64_t(pos - first + 1) * int64_t(s.head_dim) * 2;
    dispatch(pool_, n_slots, work, min_parallel_, [&](size_t i0, size_t i1) {
        for (size_t i = i0; i < i1; ++i) {
            const int h0 = int(size_t(s.n_heads) * i / n_slots), h1 = int(size_t(s.n_heads) * (i + 1) / n_slots);
            for (int hh = h0; hh < h1; ++hh) attend_head(L, hh, pos, attn_[i]);
        }
    });
}

void HostLayers::attend_head(const Layer& L, int hh, int pos, AttnScratch& sc) {
    const ModelSpec& s = spec_;
    const int HD = s.head_dim, Q = s.q_dim(), KV = s.kv_dim();
    const int group = s.n_heads / s.n_kv_heads, g = hh / group;
    const RopeTable& rope = L.sliding ? rope_local_ : rope_;
    const float off = s.norm_weight_offset, eps = s.norm_eps;
    float* q = sc.q.data();
    float* k = sc.k.data();
    float* v = sc.v.data();
    // The projections plus their biases (q_proj, k_proj and v_proj's bias terms).
    for (int d = 0; d < HD; ++d) {
        q[d] = qkv_[size_t(hh * HD + d)] + (L.bq.empty() ? 0.0f : L.bq[size_t(hh * HD + d)]);
        k[d] = qkv_[size_t(Q + g * HD + d)] + (L.bk.empty() ? 0.0f : L.bk[size_t(g * HD + d)]);
        v[d] = qkv_[size_t(Q + KV + g * HD + d)] + (L.bv.empty() ? 0.0f : L.bv[size_t(g * HD + d)]);
    }
    // Qwen3/Gemma3: query_states = self.q_norm(q.view(hidden_shape)), per head; likewise k
    if (!L.q_norm.empty()) {
        cpu::rmsnorm_f32(q, L.q_norm.data(), off, eps, q, HD);
        cpu::rmsnorm_f32(k, L.k_norm.data(), off, eps, k, HD);
    }
    // apply_rotary_pos_emb(q, k, cos, sin)
    apply_rope(q, pos, rope);
    apply_rope(k, pos, rope);
    // past_key_values.update(key_states, value_states, layer_idx): the cache holds kv_dt, so this
    // head attends to the rounded row as every later token will. The group's first head stores it;
    // the others use their own identical copy (no head reads the row at pos from the cache, so no
    // head waits for another).
    const bool int8 = kv_dt_ == DType::i8;
    const int n_kv = s.n_kv_heads;
    const size_t es = dtype_size(kv_dt_), at = (size_t(pos) * size_t(KV) + size_t(g * HD)) * es;
    if (int8) {  // the 8-bit cache: each head row as INT8 and its scale, read back as float(q) * scale
        float sk = 0, sv = 0;
        quantize_row(QuantScheme::int8, 0, k, HD, sc.kq.data(), &sk);
        quantize_row(QuantScheme::int8, 0, v, HD, sc.vq.data(), &sv);
        dequantize_row(QuantScheme::int8, 0, sc.kq.data(), &sk, HD, k);
        dequantize_row(QuantScheme::int8, 0, sc.vq.data(), &sv, HD, v);
        if (hh % group == 0) {
            std::memcpy(L.k_cache + at, sc.kq.data(), size_t(HD));
            std::memcpy(L.v_cache + at, sc.vq.data(), size_t(HD));
            L.k_scale[size_t(pos) * size_t(n_kv) + size_t(g)] = sk;
            L.v_scale[size_t(pos) * size_t(n_kv) + size_t(g)] = sv;
        }
    } else {
        round_to(k, HD, kv_dt_);
        round_to(v, HD, kv_dt_);
        if (hh % group == 0) {
            convert_floats(k, DType::f32, L.k_cache + at, kv_dt_, size_t(HD));
            convert_floats(v, DType::f32, L.v_cache + at, kv_dt_, size_t(HD));
        }
    }

    // attn_output = softmax(q k^T * scaling + sliding mask) v over keys [first, pos]
    // note: a sliding layer sees the last `sliding_window` keys, itself included.
    const int first = L.sliding ? std::max(0, pos - s.sliding_window + 1) : 0;
    const int n_prev = pos - first;  // cached keys before this token's
    const size_t row0 = (size_t(first) * size_t(KV) + size_t(g * HD)) * es;
    float* scores = sc.scores.data();
    dot_rows(L.k_cache + row0, kv_dt_, n_prev, HD, KV, q, scores);
    if (int8)  // q . (k_q * scale) = scale * (q . k_q): the scale factors out
        for (int j = 0; j < n_prev; ++j) scores[j] *= L.k_scale[size_t(first + j) * size_t(n_kv) + size_t(g)];
    dot_rows(k, DType::f32, 1, HD, HD, q, scores + n_prev);
    float max_s = -INFINITY;
    for (int j = 0; j <= n_prev; ++j) {
        float sj = scores[j] * s.attn_scale;
        if (s.attn_softcap > 0) sj = s.attn_softcap * std::tanh(sj / s.attn_softcap);
        scores[j] = sj;
        max_s = std::max(max_s, sj);
    }
    float sum = 0.0f;
    for (int j = 0; j <= n_prev; ++j) {
        scores[j] = std::exp(scores[j] - max_s);
        sum += scores[j];
    }
    for (int j = 0; j <= n_prev; ++j) scores[j] /= sum;
    float* out = att_.data() + size_t(hh * HD);
    std::fill(out, out + HD, 0.0f);
    const float* p = scores;
    if (int8) {  // sum_j p_j (v_q,j * scale_j) = sum_j (p_j * scale_j) v_q,j
        for (int j = 0; j < n_prev; ++j) sc.p_scaled[size_t(j)] = scores[j] * L.v_scale[size_t(first + j) * size_t(n_kv) + size_t(g)];
        p = sc.p_scaled.data();
    }
    weighted_row_sum(L.v_cache + row0, kv_dt_, n_prev, HD, KV, p, out);
    weighted_row_sum(v, DType::f32, 1, HD, HD, scores + n_prev, out);
}

void HostLayers::dense_ffn(const Layer& L, float* x) {
    // gate/up: act_fn(gate_proj(x)) * up_proj(x), one dispatch
    products_.clear();
    Product gu{L.w.w_gate, h_.data(), gate_.data()};
    gu.w_up = L.w.w_up;
    gu.b = or_null(L.b_gate);
    gu.b_up = or_null(L.b_up);
    gu.u = up_.data();
    products_.push_back(gu);
    run_products(products_);
    // down_proj(...), then (Gemma: post_feedforward_layernorm) and the residual add
    add_projection(L.w.w_down, gate_.data(), L.b_down, spec_.sandwich_norm ? &L.ffn_post_norm : nullptr, x);
}

void HostLayers::add_projection(const TensorView* w, const float* in, const std::vector<float>& b,
                                const std::vector<float>* post_norm, float* x) {
    const int H = spec_.hidden_dim;
    products_.clear();
    if (post_norm) {  // the projection (and its bias) normalized alone, then added
        products_.push_back({w, in, tmp_.data()});
        run_products(products_);
        if (!b.empty())
            for (int i = 0; i < H; ++i) tmp_[size_t(i)] += b[size_t(i)];
        cpu::rmsnorm_f32(tmp_.data(), post_norm->data(), spec_.norm_weight_offset, spec_.norm_eps, tmp_.data(), H);
        for (int i = 0; i < H; ++i) x[i] += tmp_[size_t(i)];
    } else {  // the residual add rides in the GEMV (accumulate), the bias after it
        products_.push_back({w, in, x, true});
        run_products(products_);
        if (!b.empty())
            for (int i = 0; i < H; ++i) x[i] += b[size_t(i)];
    }
}

void HostLayers::moe_ffn(const Layer& L, float* x) {
    const ModelSpec& s = spec_;
    const MoeSpec& m = s.moe;
    const int H = s.hidden_dim, K = m.top_k, E = m.n_experts;
    const bool shared = L.w.shexp_gate != nullptr;
    // router_logits = self.gate(hidden_states), and the shared expert's gate logit beside it
    products_.clear();
    products_.push_back({L.w.router, h_.data(), router_.data()});
    if (L.w.shexp_gate_inp) products_.push_back({L.w.shexp_gate_inp, h_.data(), router_.data() + E});
    run_products(products_);
    // routing_weights = softmax(router_logits); topk; renormalise (the reference's routing)
    cpu::moe_route(router_.data(), E, K, m.norm_topk, route_ids_.data(), route_weights_.data());
    // note: the reference adds the experts' outputs in expert order (its loop over experts), not in
    // routing order; sorting the k chosen ones by id keeps its sum's rounding.
    for (int i = 1; i < K; ++i)
        for (int j = i; j > 0 && route_ids_[size_t(j)] < route_ids_[size_t(j - 1)]; --j) {
            std::swap(route_ids_[size_t(j)], route_ids_[size_t(j - 1)]);
            std::swap(route_weights_[size_t(j)], route_weights_[size_t(j - 1)]);
        }

    // gate/up of every chosen expert and of the shared expert, one dispatch
    const size_t F = size_t(m.expert_ffn_dim);
    products_.clear();
    for (int j = 0; j < K; ++j) {
        const ExpertWeights& e = L.w.experts[size_t(route_ids_[size_t(j)])];
        Product p{e.gate, h_.data(), gate_.data() + size_t(j) * F};
        p.w_up = e.up;
        p.u = up_.data() + size_t(j) * F;
        products_.push_back(p);
    }
    if (shared) {
        Product p{L.w.shexp_gate, h_.data(), gate_.data() + size_t(K) * F};
        p.w_up = L.w.shexp_up;
        p.u = up_.data() + size_t(K) * F;
        products_.push_back(p);
    }
    run_products(products_);

    // out = sum_j weight_j * expert_j(x) (+ sigmoid(shared_expert_gate(x)) * shared_expert(x)):
    // each block of output rows runs every chosen expert's down rows, then sums them in order.
    const float shared_w = !shared ? 0.0f : L.w.shexp_gate_inp ? cpu::sigmoid(router_[size_t(E)]) : 1.0f;
    const int n_down = K + (shared ? 1 : 0);
    const int64_t work = int64_t(n_down) * int64_t(H) * std::max<int64_t>(int64_t(F), m.shared_ffn_dim);
    dispatch(pool_, size_t(n_blocks(H)), work, min_parallel_, [&](size_t b0, size_t b1) {
        const int64_t r0 = int64_t(b0) * k_block, r1 = std::min(int64_t(H), int64_t(b1) * k_block);
        for (int j = 0; j < n_down; ++j) {
            const TensorView& down = j < K ? *L.w.experts[size_t(route_ids_[size_t(j)])].down : *L.w.shexp_down;
            gemv_rows(down, gate_.data() + size_t(j) * F, expert_out_.data() + size_t(j) * size_t(H), r0, r1, false,
                      best_isa());
        }
        for (int64_t r = r0; r < r1; ++r) {
            float acc = 0.0f;
            for (int j = 0; j < K; ++j) acc += route_weights_[size_t(j)] * expert_out_[size_t(j) * size_t(H) + size_t(r)];
            if (shared) acc += shared_w * expert_out_[size_t(K) * size_t(H) + size_t(r)];
            tmp_[size_t(r)] = acc;
        }
    });
    // Gemma-style post-norm when the model has one, then hidden_states = residual + hidden_states
    if (s.sandwich_norm)
        cpu::rmsnorm_f32(tmp_.data(), L.ffn_post_norm.data(), s.norm_weight_offset, s.norm_eps, tmp_.data(), H);
    for (int i = 0; i < H; ++i) x[i] += tmp_[size_t(i)];
}

}  // namespace tt::host
