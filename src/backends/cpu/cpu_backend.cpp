// The CPU reference forward pass: one decoder layer loop driven by the ModelSpec, f32 activations
// and accumulation, weights read from the mapped archive in their stored dtype. Step comments name
// the transformers line they implement (modeling_llama.py unless noted). Every other backend is
// tested against this one.
// Sequences (the server's slots): the weights are bound once and every sequence has its own KV
// cache, DeltaNet state and checkpoints. forward() runs tokens of the selected sequence;
// decode_batch() one token of each of several sequences, as rows of the same matrices, so every
// linear layer reads each weight row once for the whole batch (continuous batching: the caller
// decides which sequences join each step). Each row attends over its own sequence's cache at its own
// position; the per-row arithmetic is the same as a single-sequence step, so the logits are equal
// bit for bit.
#include "backends/cpu/cpu_backend.h"

#include "backends/cpu/delta_net.h"
#include "backends/cpu/moe.h"
#include "backends/cpu/ops.h"
#include "core/error.h"
#include "model/weight_quant.h"
#include "model/weights.h"
#include "runtime/kv_cache_choice.h"
#include "runtime/rope.h"
#include "runtime/state_checkpoints.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tt {

namespace {

class CpuBackend final : public Backend {
public:
    CpuBackend(const Archive& a, const BackendOptions& opt)
        : spec_(spec_from_json(a.metadata()["spec"])), w_(bind_weights(a, spec_)), pool_(opt.n_threads),
          rope_(make_rope_table(spec_.rope)), rope_local_(make_rope_table(spec_.rope_local)) {
        // A quantized profile: the body's projections in INT8/INT4 (model/weight_quant.h).
        quant_ = quantize_weights(a.path(), spec_, profile_weight_scheme(opt.profile), k_int4_default_group,
                                  profile_name(opt.profile), w_, pool_);
        n_ctx_ = opt.context > 0 ? std::min(opt.context, spec_.max_context) : spec_.max_context;
        kv_int8_ = resolve_kv_cache(opt.kv_cache, opt.profile) == KvCacheType::int8;  // any head_dim
        if (opt.n_sequences < 1) fail("the CPU backend needs at least 1 sequence, got {}", opt.n_sequences);
        delta_.resize(size_t(spec_.n_layers));
        for (int il = 0; il < spec_.n_layers; ++il)
            if (spec_.is_delta_net(il)) init_delta_layer(il);
        seqs_.resize(size_t(opt.n_sequences));
        for (Sequence& q : seqs_) {
            q.k_cache.resize(size_t(spec_.n_layers));
            q.v_cache.resize(size_t(spec_.n_layers));
            q.delta.resize(size_t(spec_.n_layers));
            for (int il = 0; il < spec_.n_layers; ++il) {
                // A KV-shared layer (Gemma 4) reads another layer's cache and keeps none.
                if (spec_.has_kv(il)) {
                    const size_t kv = size_t(n_ctx_) * size_t(spec_.layer_kv_dim(il));
                    q.k_cache[size_t(il)].assign(kv, 0.0f);
                    q.v_cache[size_t(il)].assign(kv, 0.0f);
                } else if (spec_.is_delta_net(il)) {
                    q.delta[size_t(il)].state.assign(spec_.delta_net.state_floats(), 0.0f);
                    q.delta[size_t(il)].conv_state.assign(spec_.delta_net.conv_state_floats(), 0.0f);
                }
            }
        }
        cur_ = &seqs_[0];
        // note: transformers multiplies embeddings by embed_scale held in the weights' dtype, so a
        // bf16 Gemma scales by sqrt(hidden) rounded to bf16 (Gemma 4's per-layer table likewise,
        // by sqrt(per_layer_dim) in its dtype).
        embed_scale_ = in_dtype(spec_.embed_scale, w_.token_embd->dtype);
        if (spec_.per_layer_dim > 0)
            per_layer_embed_scale_ = in_dtype(float(std::sqrt(double(spec_.per_layer_dim))), w_.per_layer_token_embd->dtype);
    }

    std::string describe() const override {
        return fmt::format("cpu ({} threads{})", pool_.size(), kv_int8_ ? ", 8-bit KV cache" : "");
    }
    KvCacheType kv_cache() const override { return kv_int8_ ? KvCacheType::int8 : KvCacheType::floating; }
    int context_size() const override { return n_ctx_; }
    int n_past() const override { return cur_->n_past; }
    // A KV cache keeps every position; a DeltaNet state only the positions of its checkpoints.
    int restorable(int n) const override {
        return spec_.has_delta_net() ? cur_->checkpoints.restorable(n, cur_->n_past) : std::min(n, cur_->n_past);
    }
    bool keeps_every_position() const override { return !spec_.has_delta_net(); }
    void checkpoint() override;
    void rewind(int n) override;

    std::span<const float> forward(std::span<const int32_t> tokens, bool all_logits) override;

    int max_sequences() const override { return int(seqs_.size()); }
    void select_sequence(int seq) override {
        if (seq < 0 || seq >= int(seqs_.size()))
            fail("{}: sequence {} does not exist (it holds {})", describe(), seq, seqs_.size());
        cur_ = &seqs_[size_t(seq)];
    }
    std::span<const float> decode_batch(std::span<const int> seqs, std::span<const int32_t> tokens) override;

private:
    struct Sequence;
    // Row t of a pass: the sequence it belongs to and its position there.
    struct Row {
        Sequence* seq;
        int pos;
    };
    // The forward pass over rows (tokens[t] at rows[t]); logits for rows [first_out, n).
    std::span<const float> forward_rows(std::span<const int32_t> tokens, std::span<const Row> rows, int first_out);
    static float in_dtype(float v, DType dt) {
        if (dt == DType::bf16) return bf16_to_f32(f32_to_bf16(v));
        if (dt == DType::f16) return f16_to_f32(f32_to_f16(v));
        return v;
    }
    // Gemma 4: the per-layer inputs of n tokens whose scaled embeddings are x [n, hidden]:
    // out [n, n_layers * per_layer_dim] (transformers' get_per_layer_inputs + project_per_layer_inputs).
    void per_layer_inputs(std::span<const int32_t> tokens, const float* x, std::vector<float>& out);
    // Gemma 4: x [n, hidden] += post_norm(proj(act(gate(x)) * input)), input layer il's slice of
    // the per-layer inputs `pli` (Gemma4TextDecoderLayer.forward after the MLP).
    void add_per_layer_input(const LayerWeights& L, int il, const std::vector<float>& pli, int n, float* x);
    // out[t] = down(act(gate(x[t])) * up(x[t])) for t < n: the gated MLP of a dense layer, of an
    // expert and of a shared expert. x is [n, hidden]; biases may be null.
    void mlp(const float* x, int n, const TensorView& gate, const TensorView& up, const TensorView& down,
             const TensorView* b_gate, const TensorView* b_up, const TensorView* b_down, float* out);
    // out[t] = the mixture-of-experts FFN of layer L on x[t] (transformers' Qwen3MoeSparseMoeBlock,
    // MixtralSparseMoeBlock; the shared expert of Qwen2MoeSparseMoeBlock).
    void moe(const LayerWeights& L, const float* x, int n, float* out);

    // A DeltaNet mixer (transformers' Qwen3_5GatedDeltaNet) on x [n, hidden] of one sequence q,
    // continuing its state: out [n, hidden].
    void delta_net(const LayerWeights& L, int il, Sequence& q, const float* x, int n, float* out);
    // Softmax attention of layer il on x [n, hidden], row t at rows[t]: out [n, hidden].
    void attention(const LayerWeights& L, int il, const float* x, std::span<const Row> rows, float* out);

    // One DeltaNet layer's small weights, widened to f32 once.
    struct DeltaLayer {
        std::vector<float> conv_w, a_log, dt_bias, norm_w;
    };
    // One DeltaNet layer's recurrent state in one sequence.
    struct DeltaState {
        std::vector<float> state, conv_state;  // S [Hv, dk, dv], [conv_dim, K - 1]
    };
    // One sequence: its cache, its recurrent states and the positions it can rewind to.
    struct Sequence {
        int n_past = 0;
        std::vector<std::vector<float>> k_cache, v_cache;  // [layer][pos * layer kv_dim] (layers with a KV cache)
        std::vector<DeltaState> delta;                     // [layer] (DeltaNet layers)
        StateCheckpoints checkpoints;
    };
    void init_delta_layer(int il);
    // The DeltaNet layers' state and conv_state, layer by layer (StateCheckpoints' buffers).
    static StateCheckpoints::States save_states(const Sequence& q);
    static void load_states(Sequence& q, const StateCheckpoints::States* states);  // null: the zero state
    static constexpr int k_delta_chunk = 64;  // transformers' chunk_size

    ModelSpec spec_;
    ModelWeights w_;
    ThreadPool pool_;
    QuantizedWeights quant_;  // load-time quantized copies that w_ points into (quantized profiles)
    RopeTable rope_, rope_local_;
    float embed_scale_ = 1.0f;
    float per_layer_embed_scale_ = 1.0f;
    int n_ctx_ = 0;
    bool kv_int8_ = false;  // the 8-bit KV cache (runtime/kv_cache_type.h): --kv-cache int8, or the profile's
    std::vector<DeltaLayer> delta_;  // [layer] (DeltaNet layers)
    std::vector<Sequence> seqs_;
    Sequence* cur_ = nullptr;        // the selected sequence
    std::vector<float> logits_;
};

void CpuBackend::init_delta_layer(int il) {
    const LayerWeights& L = w_.layers[size_t(il)];
    DeltaLayer& D = delta_[size_t(il)];
    auto widen = [](const TensorView& t) {
        std::vector<float> out(size_t(t.numel()));
        const int64_t rows = t.shape.size() > 1 ? t.shape[0] : 1, cols = int64_t(out.size()) / rows;
        for (int64_t r = 0; r < rows; ++r) cpu::read_row(t, r, &out[size_t(r * cols)]);
        return out;
    };
    D.conv_w = widen(*L.ssm_conv);
    D.a_log = widen(*L.ssm_a_log);
    D.dt_bias = widen(*L.ssm_dt_bias);
    D.norm_w = widen(*L.ssm_norm);
}

StateCheckpoints::States CpuBackend::save_states(const Sequence& q) {
    StateCheckpoints::States out;
    for (const auto& D : q.delta) {
        out.push_back(D.state);
        out.push_back(D.conv_state);
    }
    return out;
}

void CpuBackend::load_states(Sequence& q, const StateCheckpoints::States* states) {
    for (size_t il = 0; il < q.delta.size(); ++il) {
        DeltaState& D = q.delta[il];
        if (states) {
            D.state = (*states)[2 * il];
            D.conv_state = (*states)[2 * il + 1];
        } else {
            std::fill(D.state.begin(), D.state.end(), 0.0f);
            std::fill(D.conv_state.begin(), D.conv_state.end(), 0.0f);
        }
    }
}

void CpuBackend::checkpoint() {
    if (spec_.has_delta_net()) cur_->checkpoints.keep(cur_->n_past, save_states(*cur_));
}

void CpuBackend::rewind(int n) {
    Sequence& q = *cur_;
    TT_ASSERT(n >= 0 && n <= q.n_past);
    if (spec_.has_delta_net() && n != q.n_past) load_states(q, q.checkpoints.rewind_to(n, q.n_past));
    q.n_past = n;
}

std::span<const float> CpuBackend::forward(std::span<const int32_t> tokens, bool all_logits) {
    const int n = int(tokens.size());
    if (n == 0) fail("forward: no tokens");
    Sequence& q = *cur_;
    if (q.n_past + n > n_ctx_)
        fail("context overflow: {} tokens cached + {} new exceed the context of {}", q.n_past, n, n_ctx_);
    std::vector<Row> rows(static_cast<size_t>(n));
    for (int t = 0; t < n; ++t) rows[size_t(t)] = {&q, q.n_past + t};
    return forward_rows(tokens, rows, all_logits ? 0 : n - 1);
}

std::span<const float> CpuBackend::decode_batch(std::span<const int> seqs, std::span<const int32_t> tokens) {
    TT_ASSERT(seqs.size() == tokens.size() && !seqs.empty());
    std::vector<Row> rows(seqs.size());
    for (size_t i = 0; i < seqs.size(); ++i) {
        if (seqs[i] < 0 || seqs[i] >= int(seqs_.size()))
            fail("{}: sequence {} does not exist (it holds {})", describe(), seqs[i], seqs_.size());
        Sequence& q = seqs_[size_t(seqs[i])];
        for (size_t j = 0; j < i; ++j) TT_ASSERT(rows[j].seq != &q);  // one token per sequence and step
        if (q.n_past + 1 > n_ctx_)
            fail("context overflow: sequence {} has {} tokens cached, the context is {}", seqs[i], q.n_past, n_ctx_);
        rows[i] = {&q, q.n_past};
    }
    return forward_rows(tokens, rows, 0);
}

std::span<const float> CpuBackend::forward_rows(std::span<const int32_t> tokens, std::span<const Row> rows, int first_out) {
    const ModelSpec& s = spec_;
    const int n = int(tokens.size());
    const int H = s.hidden_dim;
    const size_t un = size_t(n);

    std::vector<float> x(un * size_t(H)), h(un * size_t(H)), o(un * size_t(H));

    // inputs_embeds = embed_tokens(input_ids) (* embed_scale for Gemma)
    for (int t = 0; t < n; ++t) {
        const int32_t id = tokens[size_t(t)];
        if (id < 0 || id >= s.vocab_size) fail("token id {} is outside the vocabulary of {}", id, s.vocab_size);
        cpu::read_row(*w_.token_embd, id, &x[size_t(t) * size_t(H)]);
        for (int i = 0; i < H; ++i) x[size_t(t) * size_t(H) + size_t(i)] *= embed_scale_;
    }
    // Gemma 4: per_layer_inputs = self.project_per_layer_inputs(inputs_embeds, self.get_per_layer_inputs(input_ids))
    std::vector<float> pli;
    if (s.per_layer_dim > 0) per_layer_inputs(tokens, x.data(), pli);

    for (int il = 0; il < s.n_layers; ++il) {
        const LayerWeights& L = w_.layers[size_t(il)];
        // hidden_states = self.input_layernorm(hidden_states)
        for (int t = 0; t < n; ++t)
            cpu::rmsnorm(&x[size_t(t) * size_t(H)], *L.attn_norm, s.norm_weight_offset, s.norm_eps, &h[size_t(t) * size_t(H)], H);
        // Qwen3.5: hidden_states = self.linear_attn(hidden_states) on linear-attention layers
        if (s.is_delta_net(il)) {
            // The recurrent state is per sequence: runs of consecutive rows of one sequence go
            // through it together (a prompt chunk), a batch's rows one by one.
            for (int t0 = 0; t0 < n;) {
                int t1 = t0 + 1;
                while (t1 < n && rows[size_t(t1)].seq == rows[size_t(t0)].seq) ++t1;
                delta_net(L, il, *rows[size_t(t0)].seq, &h[size_t(t0) * size_t(H)], t1 - t0, &o[size_t(t0) * size_t(H)]);
                t0 = t1;
            }
        } else {
            attention(L, il, h.data(), rows, o.data());
        }
        for (int t = 0; t < n; ++t) {
            float* ot = &o[size_t(t) * size_t(H)];
            // Gemma: hidden_states = self.post_attention_layernorm(hidden_states)
            if (s.sandwich_norm) cpu::rmsnorm(ot, *L.attn_post_norm, s.norm_weight_offset, s.norm_eps, ot, H);
            // hidden_states = residual + hidden_states
            float* xt = &x[size_t(t) * size_t(H)];
            for (int i = 0; i < H; ++i) xt[i] += ot[i];
            // hidden_states = self.post_attention_layernorm(hidden_states)  (Gemma: pre_feedforward_layernorm)
            cpu::rmsnorm(xt, *L.ffn_norm, s.norm_weight_offset, s.norm_eps, &h[size_t(t) * size_t(H)], H);
        }
        // hidden_states = self.mlp(hidden_states)  (Qwen3-MoE / Mixtral: the sparse MoE block)
        if (s.is_moe(il)) moe(L, h.data(), n, o.data());
        else mlp(h.data(), n, *L.w_gate, *L.w_up, *L.w_down, L.b_gate, L.b_up, L.b_down, o.data());
        for (int t = 0; t < n; ++t) {
            float* ot = &o[size_t(t) * size_t(H)];
            // Gemma: hidden_states = self.post_feedforward_layernorm(hidden_states)
            if (s.sandwich_norm) cpu::rmsnorm(ot, *L.ffn_post_norm, s.norm_weight_offset, s.norm_eps, ot, H);
            float* xt = &x[size_t(t) * size_t(H)];
            for (int i = 0; i < H; ++i) xt[i] += ot[i];
        }
        if (s.per_layer_dim > 0) add_per_layer_input(L, il, pli, n, x.data());
        if (s.layer_scalar) {
            // Gemma 4: hidden_states *= self.layer_scalar
            float scalar = 0.0f;
            cpu::read_row(*L.layer_scalar, 0, &scalar);
            for (float& xi : x) xi *= scalar;
        }
    }
    for (const Row& r : rows) r.seq->n_past = std::max(r.seq->n_past, r.pos + 1);

    // hidden_states = self.norm(hidden_states); logits = self.lm_head(hidden_states[:, slice])
    const int n_out = n - first_out;
    for (int t = first_out; t < n; ++t)
        cpu::rmsnorm(&x[size_t(t) * size_t(H)], *w_.output_norm, s.norm_weight_offset, s.norm_eps,
                     &h[size_t(t - first_out) * size_t(H)], H);
    logits_.resize(size_t(n_out) * size_t(s.vocab_size));
    cpu::linear(pool_, h.data(), n_out, *w_.output, nullptr, logits_.data());
    if (s.final_softcap > 0)
        for (auto& l : logits_) l = s.final_softcap * std::tanh(l / s.final_softcap);
    return logits_;
}

void CpuBackend::attention(const LayerWeights& L, int il, const float* x, std::span<const Row> rows, float* out) {
    const ModelSpec& s = spec_;
    const int n = int(rows.size());
    const LayerSpec& ls = s.layers[size_t(il)];
    const int Q = s.layer_q_dim(il), KV = s.layer_kv_dim(il), HD = s.layer_head_dim(il);
    const int n_heads = s.layer_n_heads(il), n_kv_heads = s.layer_n_kv_heads(il);
    const size_t un = size_t(n);
    std::vector<float> q(un * size_t(Q)), k, v, att(un * size_t(Q)), gate;
    const bool sliding = s.sliding(il);
    const RopeTable& rope = sliding ? rope_local_ : rope_;
    // Gemma 4: a KV-shared layer attends over the cache its source layer filled earlier in this pass.
    const bool own_kv = s.has_kv(il);
    const int kv_il = s.kv_layer(il);

    // q/k/v = self.q_proj(hidden_states) ...
    if (own_kv) {
        k.resize(un * size_t(KV));
        v.resize(un * size_t(KV));
        cpu::linear(pool_, x, n, *L.wk, L.bk, k.data());
        // Gemma 4 attention_k_eq_v: value_states = key_states, the raw projection (before k_norm and RoPE)
        if (ls.k_eq_v) v = k;
        else cpu::linear(pool_, x, n, *L.wv, L.bv, v.data());
    }
    if (s.attn_output_gate) {
        // Qwen3.5: query_states, gate = torch.chunk(self.q_proj(hidden_states).view(..., -1, head_dim * 2), 2)
        std::vector<float> qg(un * size_t(2 * Q));
        cpu::linear(pool_, x, n, *L.wq, L.bq, qg.data());
        gate.resize(un * size_t(Q));
        for (size_t t = 0; t < un; ++t)
            for (int hh = 0; hh < n_heads; ++hh) {
                const float* src = &qg[t * size_t(2 * Q) + size_t(hh * 2 * HD)];
                std::copy_n(src, HD, &q[t * size_t(Q) + size_t(hh * HD)]);
                std::copy_n(src + HD, HD, &gate[t * size_t(Q) + size_t(hh * HD)]);
            }
    } else {
        cpu::linear(pool_, x, n, *L.wq, L.bq, q.data());
    }
    for (int t = 0; t < n; ++t) {
        const int pos = rows[size_t(t)].pos;
        Sequence& q_seq = *rows[size_t(t)].seq;
        for (int hh = 0; hh < n_heads; ++hh) {
            float* qh = &q[size_t(t) * size_t(Q) + size_t(hh * HD)];
            // Qwen3/Gemma3: query_states = self.q_norm(q.view(hidden_shape)), per head
            if (s.qk_norm) cpu::rmsnorm(qh, *L.q_norm, s.norm_weight_offset, s.norm_eps, qh, HD);
            // apply_rotary_pos_emb(q, k, cos, sin)
            apply_rope(qh, pos, rope);
        }
        if (!own_kv) continue;
        for (int hh = 0; hh < n_kv_heads; ++hh) {
            float* kh = &k[size_t(t) * size_t(KV) + size_t(hh * HD)];
            if (s.qk_norm) cpu::rmsnorm(kh, *L.k_norm, s.norm_weight_offset, s.norm_eps, kh, HD);
            apply_rope(kh, pos, rope);
            // Gemma 4: value_states = self.v_norm(value_states), no weight
            if (s.v_norm) {
                float* vh = &v[size_t(t) * size_t(KV) + size_t(hh * HD)];
                cpu::rmsnorm_unweighted(vh, s.norm_eps, vh, HD);
            }
        }
        // past_key_values.update(key_states, value_states, layer_idx); an 8-bit cache keeps the
        // rows rounded through INT8, which every later read (this pass's included) sees.
        if (kv_int8_) {
            round_kv_row_int8(&k[size_t(t) * size_t(KV)], n_kv_heads, HD);
            round_kv_row_int8(&v[size_t(t) * size_t(KV)], n_kv_heads, HD);
        }
        std::copy_n(&k[size_t(t) * size_t(KV)], KV, &q_seq.k_cache[size_t(il)][size_t(pos) * size_t(KV)]);
        std::copy_n(&v[size_t(t) * size_t(KV)], KV, &q_seq.v_cache[size_t(il)][size_t(pos) * size_t(KV)]);
    }
    // attn_output = softmax(q k^T * scaling + causal/sliding mask) v, with GQA (repeat_kv)
    const int group = n_heads / n_kv_heads;
    int max_pos = 0;
    uint64_t keys = 0;  // keys attended over, all rows
    for (const Row& r : rows) {
        max_pos = std::max(max_pos, r.pos);
        keys += uint64_t(r.pos + 1);
    }
    auto attend = [&](size_t b, size_t e) {
        std::vector<float> scores(size_t(max_pos + 1));
        for (size_t job = b; job < e; ++job) {
            const int t = int(job / size_t(n_heads)), hh = int(job % size_t(n_heads));
            const int pos = rows[size_t(t)].pos;
            const float* kc = rows[size_t(t)].seq->k_cache[size_t(kv_il)].data();
            const float* vc = rows[size_t(t)].seq->v_cache[size_t(kv_il)].data();
            // note: a sliding layer sees the last `sliding_window` keys, itself included
            // (transformers' sliding_window_overlay: kv_idx > q_idx - window).
            const int first = sliding ? std::max(0, pos - s.sliding_window + 1) : 0;
            cpu::attend_head(&q[size_t(t) * size_t(Q) + size_t(hh * HD)], kc, vc, KV, (hh / group) * HD, HD, first, pos,
                             s.attn_scale, s.attn_softcap, scores.data(), &att[size_t(t) * size_t(Q) + size_t(hh * HD)]);
        }
    };
    const uint64_t attn_work = keys * uint64_t(n_heads) * uint64_t(HD);
    if (attn_work < (uint64_t(1) << 18)) attend(0, un * size_t(n_heads));  // small: stay on this thread
    else pool_.parallel_for(un * size_t(n_heads), attend);
    // Qwen3.5: attn_output = attn_output * torch.sigmoid(gate)
    if (s.attn_output_gate)
        for (size_t i = 0; i < att.size(); ++i) att[i] *= cpu::sigmoid(gate[i]);
    // attn_output = self.o_proj(attn_output)
    cpu::linear(pool_, att.data(), n, *L.wo, L.bo, out);
}

void CpuBackend::per_layer_inputs(std::span<const int32_t> tokens, const float* x, std::vector<float>& out) {
    const ModelSpec& s = spec_;
    const int n = int(tokens.size()), P = s.per_layer_dim, LP = s.n_layers * P;
    out.resize(size_t(n) * size_t(LP));
    std::vector<float> row(static_cast<size_t>(LP));
    // per_layer_projection = self.per_layer_model_projection(inputs_embeds) * hidden_size ** -0.5
    cpu::linear(pool_, x, n, *w_.per_layer_model_proj, nullptr, out.data());
    const float proj_scale = float(1.0 / std::sqrt(double(s.hidden_dim)));
    const float input_scale = float(1.0 / std::sqrt(2.0));  // per_layer_input_scale = 2 ** -0.5
    for (int t = 0; t < n; ++t) {
        const int32_t id = tokens[size_t(t)];
        if (id >= s.per_layer_vocab)
            fail("token id {} is outside the per-layer embedding's vocabulary of {}", id, s.per_layer_vocab);
        // get_per_layer_inputs: self.embed_tokens_per_layer(input_ids), scaled by sqrt(per_layer_dim)
        cpu::read_row(*w_.per_layer_token_embd, id, row.data());
        for (int l = 0; l < s.n_layers; ++l) {
            float* p = &out[size_t(t) * size_t(LP) + size_t(l * P)];
            for (int i = 0; i < P; ++i) p[i] *= proj_scale;
            // per_layer_projection = self.per_layer_projection_norm(per_layer_projection), over P
            cpu::rmsnorm(p, *w_.per_layer_proj_norm, s.norm_weight_offset, s.norm_eps, p, P);
            // (per_layer_projection + per_layer_inputs) * self.per_layer_input_scale
            for (int i = 0; i < P; ++i) p[i] = (p[i] + row[size_t(l * P + i)] * per_layer_embed_scale_) * input_scale;
        }
    }
}

void CpuBackend::add_per_layer_input(const LayerWeights& L, int il, const std::vector<float>& pli, int n, float* x) {
    const ModelSpec& s = spec_;
    const int H = s.hidden_dim, P = s.per_layer_dim, LP = s.n_layers * P;
    std::vector<float> g(size_t(n) * size_t(P)), o(size_t(n) * size_t(H));
    // hidden_states = self.act_fn(self.per_layer_input_gate(hidden_states)) * per_layer_input
    cpu::linear(pool_, x, n, *L.per_layer_gate, nullptr, g.data());
    for (int t = 0; t < n; ++t)
        for (int i = 0; i < P; ++i) {
            float& gi = g[size_t(t) * size_t(P) + size_t(i)];
            gi = (s.activation == Activation::silu ? cpu::silu(gi) : cpu::gelu_tanh(gi)) * pli[size_t(t) * size_t(LP) + size_t(il * P + i)];
        }
    // hidden_states = self.post_per_layer_input_norm(self.per_layer_projection(hidden_states)); residual + it
    cpu::linear(pool_, g.data(), n, *L.per_layer_proj, nullptr, o.data());
    for (int t = 0; t < n; ++t) {
        float* ot = &o[size_t(t) * size_t(H)];
        cpu::rmsnorm(ot, *L.per_layer_post_norm, s.norm_weight_offset, s.norm_eps, ot, H);
        float* xt = x + size_t(t) * size_t(H);
        for (int i = 0; i < H; ++i) xt[i] += ot[i];
    }
}

void CpuBackend::delta_net(const LayerWeights& L, int il, Sequence& q, const float* x, int n, float* out) {
    const DeltaNetSpec& d = spec_.delta_net;
    const DeltaLayer& D = delta_[size_t(il)];
    DeltaState& S = q.delta[size_t(il)];
    const size_t un = size_t(n), cd = size_t(d.conv_dim()), vd = size_t(d.value_dim()), hv = size_t(d.n_v_heads);
    std::vector<float> mixed(un * cd), qkv(un * cd), z(un * vd), b(un * hv), a(un * hv), g(un * hv), beta(un * hv),
        core(un * vd);
    // mixed_qkv = self.in_proj_qkv(hidden_states); z, b, a = self.in_proj_z/b/a(hidden_states)
    cpu::linear(pool_, x, n, *L.ssm_in_qkv, nullptr, mixed.data());
    cpu::linear(pool_, x, n, *L.ssm_in_z, nullptr, z.data());
    cpu::linear(pool_, x, n, *L.ssm_in_b, nullptr, b.data());
    cpu::linear(pool_, x, n, *L.ssm_in_a, nullptr, a.data());
    // mixed_qkv = causal_conv1d_fn / causal_conv1d_update(mixed_qkv, conv1d.weight, activation=silu)
    cpu::causal_conv1d_silu(mixed.data(), n, D.conv_w.data(), d.conv_dim(), d.conv_kernel, S.conv_state.data(), qkv.data());
    // use_qk_l2norm_in_kernel=True; query scaled by head_k_dim ** -0.5
    cpu::delta_net_qk_norm(d, qkv.data(), n);
    // beta = b.sigmoid(); g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias)
    cpu::delta_net_gates(a.data(), b.data(), D.a_log.data(), D.dt_bias.data(), d.n_v_heads, n, g.data(), beta.data());
    // torch_recurrent_gated_delta_rule for one cached token, torch_chunk_gated_delta_rule otherwise
    // (the two agree: tests/unit/test_delta_net.cpp)
    if (n == 1) cpu::gated_delta_rule_recurrent(d, qkv.data(), g.data(), beta.data(), n, S.state.data(), core.data(), &pool_);
    else cpu::gated_delta_rule_chunked(d, qkv.data(), g.data(), beta.data(), n, k_delta_chunk, S.state.data(), core.data(), &pool_);
    // core_attn_out = self.norm(core_attn_out, z): per value head, RMSNorm * w * silu(z)
    for (size_t r = 0; r < un * hv; ++r)
        cpu::gated_rmsnorm(&core[r * size_t(d.v_head_dim)], &z[r * size_t(d.v_head_dim)], D.norm_w.data(), spec_.norm_eps,
                           &core[r * size_t(d.v_head_dim)], d.v_head_dim);
    // output = self.out_proj(core_attn_out)
    cpu::linear(pool_, core.data(), n, *L.ssm_out, nullptr, out);
}

void CpuBackend::mlp(const float* x, int n, const TensorView& gate, const TensorView& up, const TensorView& down,
                     const TensorView* b_gate, const TensorView* b_up, const TensorView* b_down, float* out) {
    const size_t f = size_t(gate.shape[0]);
    std::vector<float> g(size_t(n) * f), u(size_t(n) * f);
    // down_proj(act_fn(gate_proj(x)) * up_proj(x))
    cpu::linear(pool_, x, n, gate, b_gate, g.data());
    cpu::linear(pool_, x, n, up, b_up, u.data());
    for (size_t i = 0; i < g.size(); ++i)
        g[i] = (spec_.activation == Activation::silu ? cpu::silu(g[i]) : cpu::gelu_tanh(g[i])) * u[i];
    cpu::linear(pool_, g.data(), n, down, b_down, out);
}

void CpuBackend::moe(const LayerWeights& L, const float* x, int n, float* out) {
    const MoeSpec& m = spec_.moe;
    const size_t H = size_t(spec_.hidden_dim), E = size_t(m.n_experts), K = size_t(m.top_k);
    // router_logits = self.gate(hidden_states)
    std::vector<float> logits(size_t(n) * E);
    cpu::linear(pool_, x, n, *L.router, nullptr, logits.data());
    // routing_weights = softmax(router_logits, dtype=float); topk; renormalise (cpu/moe.cpp)
    std::vector<int32_t> ids(size_t(n) * K);
    std::vector<float> weights(size_t(n) * K);
    for (int t = 0; t < n; ++t)
        cpu::moe_route(&logits[size_t(t) * E], m.n_experts, m.top_k, m.norm_topk, &ids[size_t(t) * K], &weights[size_t(t) * K]);
    std::fill(out, out + size_t(n) * H, 0.0f);
    // for expert_idx in expert_hit: the tokens routed to it, through it, scaled by their routing
    // weight and added (index_add_) in expert order.
    std::vector<float> xe, ye;
    for (size_t e = 0; e < E; ++e) {
        std::vector<std::pair<int, float>> tokens;  // (token, routing weight)
        for (int t = 0; t < n; ++t)
            for (size_t j = 0; j < K; ++j)
                if (ids[size_t(t) * K + j] == int32_t(e)) tokens.emplace_back(t, weights[size_t(t) * K + j]);
        if (tokens.empty()) continue;
        const int ne = int(tokens.size());
        xe.resize(size_t(ne) * H);
        ye.resize(size_t(ne) * H);
        for (int i = 0; i < ne; ++i) std::copy_n(x + size_t(tokens[size_t(i)].first) * H, H, &xe[size_t(i) * H]);
        const ExpertWeights& ex = L.experts[e];
        mlp(xe.data(), ne, *ex.gate, *ex.up, *ex.down, nullptr, nullptr, nullptr, ye.data());
        for (int i = 0; i < ne; ++i) {
            float* o = out + size_t(tokens[size_t(i)].first) * H;
            for (size_t c = 0; c < H; ++c) o[c] += tokens[size_t(i)].second * ye[size_t(i) * H + c];
        }
    }
    if (!L.shexp_gate) return;
    // Qwen2-MoE: shared_expert_output = sigmoid(self.shared_expert_gate(x)) * self.shared_expert(x)
    ye.resize(size_t(n) * H);
    mlp(x, n, *L.shexp_gate, *L.shexp_up, *L.shexp_down, nullptr, nullptr, nullptr, ye.data());
    std::vector<float> gate(size_t(n), 0.0f);
    if (L.shexp_gate_inp) cpu::linear(pool_, x, n, *L.shexp_gate_inp, nullptr, gate.data());
    for (int t = 0; t < n; ++t) {
        const float g = L.shexp_gate_inp ? cpu::sigmoid(gate[size_t(t)]) : 1.0f;
        for (size_t c = 0; c < H; ++c) out[size_t(t) * H + c] += g * ye[size_t(t) * H + c];
    }
}

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const Archive& archive, const BackendOptions& opt) {
    return std::make_unique<CpuBackend>(archive, opt);
}

}  // namespace tt
