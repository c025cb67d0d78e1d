// The CPU reference forward pass: one decoder layer loop driven by the ModelSpec, f32 activations
// and accumulation, weights read from the mapped archive in their stored dtype. Step comments name
// the transformers line they implement (modeling_llama.py unless noted). Every other backend is
// tested against this one.
#include "backends/cpu/cpu_backend.h"

#include "backends/cpu/ops.h"
#include "core/error.h"
#include "model/weights.h"
#include "runtime/rope.h"

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
        n_ctx_ = opt.context > 0 ? std::min(opt.context, spec_.max_context) : spec_.max_context;
        const size_t kv = size_t(n_ctx_) * size_t(spec_.kv_dim());
        k_cache_.assign(size_t(spec_.n_layers), std::vector<float>(kv));
        v_cache_.assign(size_t(spec_.n_layers), std::vector<float>(kv));
        // note: transformers multiplies embeddings by embed_scale held in the weights' dtype, so a
        // bf16 Gemma scales by sqrt(hidden) rounded to bf16.
        embed_scale_ = spec_.embed_scale;
        if (w_.token_embd->dtype == DType::bf16) embed_scale_ = bf16_to_f32(f32_to_bf16(embed_scale_));
        if (w_.token_embd->dtype == DType::f16) embed_scale_ = f16_to_f32(f32_to_f16(embed_scale_));
    }

    std::string describe() const override { return fmt::format("cpu ({} threads)", pool_.size()); }
    int context_size() const override { return n_ctx_; }
    int n_past() const override { return n_past_; }
    void rewind(int n) override {
        TT_ASSERT(n >= 0 && n <= n_past_);
        n_past_ = n;
    }

    std::span<const float> forward(std::span<const int32_t> tokens, bool all_logits) override;

private:
    ModelSpec spec_;
    ModelWeights w_;
    ThreadPool pool_;
    RopeTable rope_, rope_local_;
    float embed_scale_ = 1.0f;
    int n_ctx_ = 0;
    int n_past_ = 0;
    std::vector<std::vector<float>> k_cache_, v_cache_;  // [layer][pos * kv_dim]
    std::vector<float> logits_;
};

std::span<const float> CpuBackend::forward(std::span<const int32_t> tokens, bool all_logits) {
    const ModelSpec& s = spec_;
    const int n = int(tokens.size());
    if (n == 0) fail("forward: no tokens");
    if (n_past_ + n > n_ctx_)
        fail("context overflow: {} tokens cached + {} new exceed the context of {}", n_past_, n, n_ctx_);
    const int H = s.hidden_dim, Q = s.q_dim(), KV = s.kv_dim(), F = s.ffn_dim, HD = s.head_dim;
    const size_t un = size_t(n);

    std::vector<float> x(un * size_t(H)), h(un * size_t(H)), q(un * size_t(Q)), k(un * size_t(KV)), v(un * size_t(KV));
    std::vector<float> att(un * size_t(Q)), o(un * size_t(H)), gate(un * size_t(F)), up(un * size_t(F));

    // inputs_embeds = embed_tokens(input_ids) (* embed_scale for Gemma)
    for (int t = 0; t < n; ++t) {
        const int32_t id = tokens[size_t(t)];
        if (id < 0 || id >= s.vocab_size) fail("token id {} is outside the vocabulary of {}", id, s.vocab_size);
        cpu::read_row(*w_.token_embd, id, &x[size_t(t) * size_t(H)]);
        for (int i = 0; i < H; ++i) x[size_t(t) * size_t(H) + size_t(i)] *= embed_scale_;
    }

    for (int il = 0; il < s.n_layers; ++il) {
        const LayerWeights& L = w_.layers[size_t(il)];
        const bool sliding = s.layer_attn[size_t(il)] == AttnKind::sliding;
        const RopeTable& rope = sliding ? rope_local_ : rope_;

        // hidden_states = self.input_layernorm(hidden_states)
        for (int t = 0; t < n; ++t)
            cpu::rmsnorm(&x[size_t(t) * size_t(H)], *L.attn_norm, s.norm_weight_offset, s.norm_eps, &h[size_t(t) * size_t(H)], H);
        // q/k/v = self.q_proj(hidden_states) ...
        cpu::linear(pool_, h.data(), n, *L.wq, L.bq, q.data());
        cpu::linear(pool_, h.data(), n, *L.wk, L.bk, k.data());
        cpu::linear(pool_, h.data(), n, *L.wv, L.bv, v.data());
        for (int t = 0; t < n; ++t) {
            const int pos = n_past_ + t;
            for (int hh = 0; hh < s.n_heads; ++hh) {
                float* qh = &q[size_t(t) * size_t(Q) + size_t(hh * HD)];
                // Qwen3/Gemma3: query_states = self.q_norm(q.view(hidden_shape)), per head
                if (s.qk_norm) cpu::rmsnorm(qh, *L.q_norm, s.norm_weight_offset, s.norm_eps, qh, HD);
                // apply_rotary_pos_emb(q, k, cos, sin)
                apply_rope(qh, pos, rope);
            }
            for (int hh = 0; hh < s.n_kv_heads; ++hh) {
                float* kh = &k[size_t(t) * size_t(KV) + size_t(hh * HD)];
                if (s.qk_norm) cpu::rmsnorm(kh, *L.k_norm, s.norm_weight_offset, s.norm_eps, kh, HD);
                apply_rope(kh, pos, rope);
            }
            // past_key_values.update(key_states, value_states, layer_idx)
            std::copy_n(&k[size_t(t) * size_t(KV)], KV, &k_cache_[size_t(il)][size_t(pos) * size_t(KV)]);
            std::copy_n(&v[size_t(t) * size_t(KV)], KV, &v_cache_[size_t(il)][size_t(pos) * size_t(KV)]);
        }
        // attn_output = softmax(q k^T * scaling + causal/sliding mask) v, with GQA (repeat_kv)
        const int group = s.n_heads / s.n_kv_heads;
        auto attend = [&](size_t b, size_t e) {
            std::vector<float> scores(size_t(n_past_ + n));
            for (size_t job = b; job < e; ++job) {
                const int t = int(job / size_t(s.n_heads)), hh = int(job % size_t(s.n_heads));
                const int pos = n_past_ + t;
                // note: a sliding layer sees the last `sliding_window` keys, itself included
                // (transformers' sliding_window_overlay: kv_idx > q_idx - window).
                const int first = sliding ? std::max(0, pos - s.sliding_window + 1) : 0;
                cpu::attend_head(&q[size_t(t) * size_t(Q) + size_t(hh * HD)], k_cache_[size_t(il)].data(),
                                 v_cache_[size_t(il)].data(), KV, (hh / group) * HD, HD, first, pos, s.attn_scale,
                                 s.attn_softcap, scores.data(), &att[size_t(t) * size_t(Q) + size_t(hh * HD)]);
            }
        };
        const uint64_t attn_work = uint64_t(n) * uint64_t(s.n_heads) * uint64_t(n_past_ + n) * uint64_t(HD);
        if (attn_work < (uint64_t(1) << 18)) attend(0, un * size_t(s.n_heads));  // small: stay on this thread
        else pool_.parallel_for(un * size_t(s.n_heads), attend);
        // attn_output = self.o_proj(attn_output)
        cpu::linear(pool_, att.data(), n, *L.wo, L.bo, o.data());
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
        // down_proj(act_fn(gate_proj(x)) * up_proj(x))
        cpu::linear(pool_, h.data(), n, *L.w_gate, L.b_gate, gate.data());
        cpu::linear(pool_, h.data(), n, *L.w_up, L.b_up, up.data());
        for (size_t i = 0; i < gate.size(); ++i)
            gate[i] = (s.activation == Activation::silu ? cpu::silu(gate[i]) : cpu::gelu_tanh(gate[i])) * up[i];
        cpu::linear(pool_, gate.data(), n, *L.w_down, L.b_down, o.data());
        for (int t = 0; t < n; ++t) {
            float* ot = &o[size_t(t) * size_t(H)];
            // Gemma: hidden_states = self.post_feedforward_layernorm(hidden_states)
            if (s.sandwich_norm) cpu::rmsnorm(ot, *L.ffn_post_norm, s.norm_weight_offset, s.norm_eps, ot, H);
            float* xt = &x[size_t(t) * size_t(H)];
            for (int i = 0; i < H; ++i) xt[i] += ot[i];
        }
    }
    n_past_ += n;

    // hidden_states = self.norm(hidden_states); logits = self.lm_head(hidden_states[:, slice])
    const int first_out = all_logits ? 0 : n - 1;
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

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const Archive& archive, const BackendOptions& opt) {
    return std::make_unique<CpuBackend>(archive, opt);
}

}  // namespace tt
