#include "backends/host/host_backend.h"

#include "backends/cpu/ops.h"
#include "backends/host/gemv.h"
#include "backends/host/host_layers.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "model/weight_quant.h"
#include "model/weights.h"
#include "runtime/device_buffers.h"
#include "runtime/kv_cache_choice.h"
#include "runtime/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace tt {

namespace {

std::vector<int> every_layer(const ModelSpec& s) {
    std::vector<int> layers(static_cast<size_t>(s.n_layers));
    std::iota(layers.begin(), layers.end(), 0);
    return layers;
}

int context_of(const ModelSpec& s, const BackendOptions& opt) {
    return opt.context > 0 ? std::min(opt.context, s.max_context) : s.max_context;
}

class HostBackend final : public Backend {
public:
    HostBackend(const Archive& a, const BackendOptions& opt, int64_t min_parallel)
        : spec_(spec_from_json(a.metadata()["spec"])), w_(bind_weights(a, spec_)), pool_(opt.n_threads),
          // A quantized profile: the body's projections in INT8/INT4, as on the CPU reference
          // (model/weight_quant.h), before the layers take their weights.
          quant_(quantize_weights(a.path(), spec_, profile_weight_scheme(opt.profile), k_int4_default_group,
                                  profile_name(opt.profile), w_, pool_)),
          n_ctx_(context_of(spec_, opt)),
          kv_int8_(resolve_kv_cache(opt.kv_cache, opt.profile) == KvCacheType::int8),  // any head_dim
          layers_(spec_, w_, every_layer(spec_), n_ctx_, kv_int8_ ? DType::i8 : kv_cache_dtype(w_.token_embd->dtype), pool_) {
        layers_.set_min_parallel(min_parallel);
        // note: transformers multiplies embeddings by embed_scale held in the weights' dtype (as
        // the CPU reference does).
        embed_scale_ = spec_.embed_scale;
        if (w_.token_embd->dtype == DType::bf16) embed_scale_ = bf16_to_f32(f32_to_bf16(embed_scale_));
        if (w_.token_embd->dtype == DType::f16) embed_scale_ = f16_to_f32(f32_to_f16(embed_scale_));
        output_norm_.resize(size_t(spec_.hidden_dim));
        to_f32(w_.output_norm->data, w_.output_norm->dtype, output_norm_.data(), output_norm_.size());
        x_.resize(size_t(spec_.hidden_dim));
        h_.resize(size_t(spec_.hidden_dim));
    }

    std::string describe() const override {
        return fmt::format("host ({} threads, {}{})", pool_.size(), host::isa_name(host::best_isa()), kv_int8_ ? ", 8-bit KV cache" : "");
    }
    KvCacheType kv_cache() const override { return kv_int8_ ? KvCacheType::int8 : KvCacheType::floating; }
    int context_size() const override { return n_ctx_; }
    int n_past() const override { return n_past_; }
    void rewind(int n) override {
        TT_ASSERT(n >= 0 && n <= n_past_);
        n_past_ = n;
    }

    std::span<const float> forward(std::span<const int32_t> tokens, bool all_logits) override {
        const ModelSpec& s = spec_;
        const int n = int(tokens.size());
        if (n == 0) fail("forward: no tokens");
        if (n_past_ + n > n_ctx_)
            fail("context overflow: {} tokens cached + {} new exceed the context of {}", n_past_, n, n_ctx_);
        for (const int32_t id : tokens)
            if (id < 0 || id >= s.vocab_size) fail("token id {} is outside the vocabulary of {}", id, s.vocab_size);
        const size_t V = size_t(s.vocab_size);
        logits_.resize((all_logits ? size_t(n) : 1) * V);
        for (int t = 0; t < n; ++t) {
            // inputs_embeds = embed_tokens(input_ids) (* embed_scale for Gemma)
            cpu::read_row(*w_.token_embd, tokens[size_t(t)], x_.data());
            for (float& v : x_) v *= embed_scale_;
            for (int il = 0; il < s.n_layers; ++il) layers_.forward(il, x_.data(), n_past_ + t);
            if (!all_logits && t < n - 1) continue;
            // hidden_states = self.norm(hidden_states); logits = self.lm_head(hidden_states)
            cpu::rmsnorm_f32(x_.data(), output_norm_.data(), s.norm_weight_offset, s.norm_eps, h_.data(), s.hidden_dim);
            float* out = logits_.data() + (all_logits ? size_t(t) * V : 0);
            host::gemv(pool_, *w_.output, h_.data(), out, false);
            if (s.final_softcap > 0)
                for (size_t i = 0; i < V; ++i) out[i] = s.final_softcap * std::tanh(out[i] / s.final_softcap);
        }
        n_past_ += n;
        return logits_;
    }

private:
    ModelSpec spec_;
    ModelWeights w_;
    ThreadPool pool_;
    QuantizedWeights quant_;  // load-time quantized copies that w_ points into (quantized profiles)
    int n_ctx_ = 0;
    bool kv_int8_ = false;  // the 8-bit KV cache (runtime/kv_cache_type.h): --kv-cache int8, or the profile's
    host::HostLayers layers_;
    float embed_scale_ = 1.0f;
    int n_past_ = 0;
    std::vector<float> output_norm_;  // [hidden], widened once
    std::vector<float> x_, h_;        // [hidden]: the residual stream, the final norm's output
    std::vector<float> logits_;
};

}  // namespace

std::unique_ptr<Backend> make_host_backend(const Archive& archive, const BackendOptions& opt) {
    return std::make_unique<HostBackend>(archive, opt, host::HostLayers::k_min_parallel);
}

std::unique_ptr<Backend> make_host_backend(const Archive& archive, const BackendOptions& opt, int64_t min_parallel) {
    return std::make_unique<HostBackend>(archive, opt, min_parallel);
}

}  // namespace tt
