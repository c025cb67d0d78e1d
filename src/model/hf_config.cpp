#include "model/hf_config.h"

#include "core/error.h"
#include "model/config_fields.h"

#include <fmt/ranges.h>

#include <climits>
#include <optional>
#include <cmath>

namespace tt {

namespace {

struct ArchEntry {
    const char* hf_name;
    Arch arch;
    bool default_tied;  // transformers' default for tie_word_embeddings when config.json omits it
};
constexpr ArchEntry k_archs[] = {
    {"LlamaForCausalLM", Arch::llama, false},  {"MistralForCausalLM", Arch::mistral, false},
    {"Qwen2ForCausalLM", Arch::qwen2, false},  {"Qwen3ForCausalLM", Arch::qwen3, false},
    {"Phi3ForCausalLM", Arch::phi3, false},    {"Gemma3ForCausalLM", Arch::gemma3, true},
    {"Qwen3MoeForCausalLM", Arch::qwen3_moe, false}, {"MixtralForCausalLM", Arch::mixtral, false},
    // Qwen3.5: the text model alone, and the published image-text layout (config under
    // text_config, weights under model.language_model.*; tensor_names.cpp) whose text part runs.
    {"Qwen3_5ForCausalLM", Arch::qwen3_5, false}, {"Qwen3_5ForConditionalGeneration", Arch::qwen3_5, false},
    {"Qwen3_5MoeForCausalLM", Arch::qwen3_5_moe, false}, {"Qwen3_5MoeForConditionalGeneration", Arch::qwen3_5_moe, false},
    // Gemma 4: the text model, and the text part of the image/audio-text layout.
    {"Gemma4ForCausalLM", Arch::gemma4, true}, {"Gemma4ForConditionalGeneration", Arch::gemma4, true},
};

bool is_qwen3_5(Arch a) { return a == Arch::qwen3_5 || a == Arch::qwen3_5_moe; }

// Which layers are mixtures of experts, and their sizes (transformers' Qwen3MoeDecoderLayer /
// MixtralDecoderLayer / Qwen2MoeDecoderLayer).
void parse_moe(const ConfigFields& c, ModelSpec& s) {
    MoeSpec& m = s.moe;
    // note: Qwen3-MoE configs on the Hub name the count num_experts; transformers 5 writes
    // num_local_experts (Mixtral's name) for both.
    const char* count_key = c.has("num_experts") ? "num_experts" : "num_local_experts";
    m.n_experts = int(c.req_int(count_key, 1, spec_limits::experts));
    m.top_k = int(c.req_int("num_experts_per_tok", 1, spec_limits::experts));
    if (m.top_k > m.n_experts)
        fail("{}: 'num_experts_per_tok' {} is more than '{}' {}", c.file(), m.top_k, count_key, m.n_experts);
    if (s.arch == Arch::mixtral) {
        // MixtralBlockSparseTop2MLP: the experts are intermediate_size wide; top-k always renormalised.
        m.expert_ffn_dim = s.ffn_dim;
        m.norm_topk = true;
    } else if (s.arch == Arch::qwen3_5_moe) {
        // Qwen3_5MoeTopKRouter renormalises the kept probabilities always (no norm_topk_prob).
        m.expert_ffn_dim = int(c.req_int("moe_intermediate_size", 1, spec_limits::width));
        m.norm_topk = true;
    } else {
        m.expert_ffn_dim = int(c.req_int("moe_intermediate_size", 1, spec_limits::width));
        m.norm_topk = c.opt_bool("norm_topk_prob", false);
    }
    m.shared_ffn_dim = int(c.opt_int("shared_expert_intermediate_size", 0, 0, spec_limits::width));
    m.shared_gate = m.shared_ffn_dim > 0;  // Qwen2-MoE: shared_expert_gate, a sigmoid of one row
    // Qwen3-MoE: layer i is sparse unless listed in mlp_only_layers, every decoder_sparse_step-th.
    const int step = int(c.opt_int("decoder_sparse_step", 1, 1, spec_limits::layers));
    std::vector<bool> dense_only(size_t(s.n_layers), false);
    if (const auto only = c.opt_int_list("mlp_only_layers", 0, spec_limits::layers - 1)) {
        for (int64_t i : *only) {
            if (i >= s.n_layers) fail("{}: 'mlp_only_layers' names layer {}, but the model has {} layers", c.file(), i, s.n_layers);
            dense_only[size_t(i)] = true;
        }
    }
    for (int i = 0; i < s.n_layers; ++i)
        if (!dense_only[size_t(i)] && (i + 1) % step == 0) s.layers[size_t(i)].ffn = FfnKind::moe;
    if (!s.has_moe()) m = MoeSpec{};  // every layer dense: an ordinary model
}

// transformers' get_mscale for yarn.
double yarn_mscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; }

// One rope parameter set: transformers 5 "rope_parameters" entries, or v4's rope_theta +
// rope_scaling merged into the same shape by the caller.
RopeSpec parse_rope(const ConfigFields& p, int head_dim, double partial_rotary_factor, int max_pos) {
    RopeSpec r;
    r.theta = p.opt_num("rope_theta", 10000.0);
    const double prf = p.opt_num("partial_rotary_factor", partial_rotary_factor);
    if (!(prf > 0 && prf <= 1)) fail("{}: {} must be in (0, 1], got {}", p.file(), p.has("partial_rotary_factor") ? p.name("partial_rotary_factor") : "'partial_rotary_factor'", prf);
    r.rotary_dim = int(head_dim * prf);
    // "type": older configs.
    const std::string type = p.has("rope_type") ? p.opt_str("rope_type", "") : p.opt_str("type", "default");
    if (type == "default") {
        r.scaling = RopeScaling::none;
    } else if (type == "linear") {
        r.scaling = RopeScaling::linear;
        r.factor = p.opt_num("factor", 1.0);
    } else if (type == "llama3") {
        r.scaling = RopeScaling::llama3;
        r.factor = p.opt_num("factor", 1.0);
        r.low_freq_factor = p.opt_num("low_freq_factor", 1.0);
        r.high_freq_factor = p.opt_num("high_freq_factor", 4.0);
        r.original_max_position = int(p.opt_int("original_max_position_embeddings", 0, 1, spec_limits::positions));
    } else if (type == "yarn") {
        r.scaling = RopeScaling::yarn;
        r.factor = p.opt_num("factor", 1.0);
        r.beta_fast = p.opt_num("beta_fast", 32.0);
        r.beta_slow = p.opt_num("beta_slow", 1.0);
        r.truncate = p.opt_bool("truncate", true);
        r.original_max_position = int(p.opt_int("original_max_position_embeddings", max_pos, 1, spec_limits::positions));
        // note: as transformers does, the default attention factor uses max_pos / original when the
        // config names the original context, and `factor` otherwise.
        const double mscale_factor = p.has("original_max_position_embeddings") ? double(max_pos) / r.original_max_position : r.factor;
        if (p.has("attention_factor")) {
            r.attention_factor = p.opt_num("attention_factor", 1.0);
        } else {
            const double m = p.opt_num("mscale", 0.0), m_all = p.opt_num("mscale_all_dim", 0.0);
            r.attention_factor = (m != 0 && m_all != 0) ? yarn_mscale(mscale_factor, m) / yarn_mscale(mscale_factor, m_all)
                                                        : yarn_mscale(mscale_factor, 1.0);
        }
    } else if (type == "proportional") {
        // _compute_proportional_rope_parameters: the whole head pairs the rotate_half way; the first
        // int(partial_rotary_factor * head_dim // 2) pairs turn, over exponents 2i / head_dim.
        r.scaling = RopeScaling::proportional;
        r.factor = p.opt_num("factor", 1.0);
        r.rotary_dim = head_dim;
        r.rotated_pairs = int(std::floor(prf * head_dim / 2));
    } else {
        fail("{}: rope type '{}' is not supported (supported: default, linear, llama3, yarn, proportional)", p.file(), type);
    }
    return r;
}

// transformers 5 writes "rope_parameters"; v4 writes rope_theta + rope_scaling at the top level.
// The theta is read (and checked, under its own name) here; the merged object is read as
// "rope_scaling".
nlohmann::json rope_params_v4(const ConfigFields& c, const char* theta_key) {
    nlohmann::json p = nlohmann::json::object();
    if (const auto s = c.opt_object("rope_scaling")) p = *c.find("rope_scaling");
    if (c.has(theta_key)) p["rope_theta"] = c.opt_num(theta_key, 0.0);
    return p;
}

// Gemma 4's text model (transformers' Gemma4TextConfig / Gemma4TextModel), on top of what
// spec_from_text_config read: per-layer head sizes (per_layer_config, or the older global_head_dim
// and num_global_key_value_heads of full-attention layers), KV sharing in the last
// num_kv_shared_layers layers, attention_k_eq_v, the double-wide MLP of KV-shared layers, the
// per-layer inputs, plain-w norms, attention scaling 1 and a RoPE per layer type.
void parse_gemma4(const ConfigFields& c, ModelSpec& s, const std::string& ctx) {
    if (c.opt_bool("enable_moe_block", false))
        fail("{}: {} with enable_moe_block=true (a dense MLP beside a mixture of experts in each layer) is not supported yet",
             ctx, s.hf_architecture);
    // "vision" makes image tokens attend both ways, which text-only input never has; "all" would
    // make every layer bidirectional.
    if (const nlohmann::json* b = c.find("use_bidirectional_attention")) {
        const bool causal = (b->is_boolean() && !b->get<bool>()) || (b->is_string() && b->get<std::string>() == "vision");
        if (!causal) fail("{}: 'use_bidirectional_attention' {} is not supported (ThinTensor attends causally)", ctx, b->dump());
    }
    s.qk_norm = true;
    s.v_norm = true;  // Gemma4TextAttention.v_norm: with_scale=False
    s.sandwich_norm = true;
    s.norm_weight_offset = 0.0f;  // Gemma4RMSNorm multiplies by w, not (1 + w)
    s.attn_scale = 1.0f;          // self.scaling = 1.0: q_norm / k_norm take the place of 1/sqrt(d)
    s.embed_scale = float(std::sqrt(double(s.hidden_dim)));
    s.final_softcap = float(c.opt_num("final_logit_softcapping", 0.0));
    s.layer_scalar = true;
    s.per_layer_dim = int(c.opt_int("hidden_size_per_layer_input", 0, 0, spec_limits::width));
    if (s.per_layer_dim > 0)
        s.per_layer_vocab = int(c.opt_int("vocab_size_per_layer_input", s.vocab_size, 1, spec_limits::vocab));

    // Per-layer sizes. transformers >= 5.15 writes per_layer_config {"<layer>": {"head_dim": ...}};
    // earlier configs name the full-attention layers' sizes global_head_dim and (for k_eq_v
    // layers) num_global_key_value_heads.
    const bool k_eq_v = c.opt_bool("attention_k_eq_v", false);
    const int global_head_dim = int(c.opt_int("global_head_dim", 0, 0, spec_limits::head_dim));
    const int global_kv_heads = int(c.opt_int("num_global_key_value_heads", 0, 0, spec_limits::heads));
    for (int il = 0; il < s.n_layers; ++il) {
        LayerSpec& l = s.layers[size_t(il)];
        if (l.attn == AttnKind::sliding) continue;
        if (global_head_dim > 0) l.head_dim = global_head_dim;
        if (k_eq_v) {
            l.k_eq_v = true;
            if (global_kv_heads > 0) l.n_kv_heads = global_kv_heads;
        }
    }
    bool per_layer_ffn = false;
    if (c.opt_object("per_layer_config")) {
        for (const auto& [key, value] : c.find("per_layer_config")->items()) {
            int il = -1;
            if (key.empty() || key.size() > 6 || key.find_first_not_of("0123456789") != std::string::npos ||
                (il = std::stoi(key)) >= s.n_layers)
                fail("{}: 'per_layer_config' key '{}' is not a layer index below num_hidden_layers {}", ctx, key, s.n_layers);
            if (!value.is_object()) fail("{}: 'per_layer_config.{}' must be an object", ctx, key);
            const ConfigFields f(value, ctx, "per_layer_config." + key + ".");
            for (const auto& [field, v] : value.items())
                if (field != "head_dim" && field != "num_attention_heads" && field != "num_key_value_heads" &&
                    field != "intermediate_size")
                    fail("{}: 'per_layer_config.{}.{}' is not supported (ThinTensor reads head_dim, num_attention_heads, "
                         "num_key_value_heads and intermediate_size per layer)", ctx, key, field);
            LayerSpec& l = s.layers[size_t(il)];
            l.head_dim = int(f.opt_int("head_dim", l.head_dim, 1, spec_limits::head_dim));
            l.n_heads = int(f.opt_int("num_attention_heads", l.n_heads, 1, spec_limits::heads));
            l.n_kv_heads = int(f.opt_int("num_key_value_heads", l.n_kv_heads, 1, spec_limits::heads));
            l.ffn_dim = int(f.opt_int("intermediate_size", l.ffn_dim, 1, spec_limits::width));
            per_layer_ffn |= f.has("intermediate_size");
        }
    }
    // Gemma4TextAttention: layers from num_hidden_layers - num_kv_shared_layers on reuse the keys
    // and values of the last earlier layer of their type (store_full_length_kv).
    const int n_shared = int(c.opt_int("num_kv_shared_layers", 0, 0, s.n_layers));
    const int first_shared = s.n_layers - n_shared;
    for (int il = first_shared; il < s.n_layers; ++il) {
        LayerSpec& l = s.layers[size_t(il)];
        for (int src = first_shared - 1; src >= 0 && l.kv_from < 0; --src)
            if (s.layers[size_t(src)].attn == l.attn) l.kv_from = src;
        if (l.kv_from < 0)
            fail("{}: layer {} shares keys and values (num_kv_shared_layers {}), but no earlier layer has its type '{}'", ctx,
                 il, n_shared, l.attn == AttnKind::sliding ? "sliding_attention" : "full_attention");
        l.k_eq_v = false;  // it has no k/v projection of its own
    }
    // Gemma4TextMLP: KV-shared layers are twice as wide with use_double_wide_mlp (when some layer
    // keeps its own KV: `first_kv_shared_layer_idx > 0`).
    if (c.opt_bool("use_double_wide_mlp", false) && first_shared > 0 && n_shared > 0) {
        if (per_layer_ffn)
            fail("{}: use_double_wide_mlp together with a per-layer intermediate_size in 'per_layer_config' is ambiguous; "
                 "ThinTensor refuses to guess which width the checkpoint has", ctx);
        for (int il = first_shared; il < s.n_layers; ++il) s.layers[size_t(il)].ffn_dim = 2 * s.ffn_dim;
    }

    // RoPE per layer type: one parameter set for each, at the head_dim of that type's layers.
    auto type_head_dim = [&](AttnKind kind) {
        int hd = 0;
        for (int il = 0; il < s.n_layers; ++il) {
            if (s.layers[size_t(il)].attn != kind) continue;
            if (hd != 0 && hd != s.layer_head_dim(il))
                fail("{}: the {} layers have different head_dim ({} and {}); one RoPE per layer type needs one", ctx,
                     kind == AttnKind::sliding ? "sliding" : "full-attention", hd, s.layer_head_dim(il));
            hd = s.layer_head_dim(il);
        }
        return hd > 0 ? hd : s.head_dim;
    };
    const auto rp = c.opt_object("rope_parameters");
    if (!rp) fail("{}: {} needs 'rope_parameters' (one set per layer type)", ctx, s.hf_architecture);
    auto rope_of = [&](const char* type, AttnKind kind) {
        const auto p = rp->opt_object(type);
        if (!p) fail("{}: 'rope_parameters' has no '{}' entry", ctx, type);
        const int hd = type_head_dim(kind);
        RopeSpec r = parse_rope(*p, hd, 1.0, s.max_context);
        // note: Gemma 4's default RoPE rotates the whole head whatever partial_rotary_factor says
        // (its compute_default_rope_parameters reads head_dim alone).
        if (r.scaling == RopeScaling::none) r.rotary_dim = hd;
        return r;
    };
    bool any_sliding = false, any_full = false;
    for (const auto& l : s.layers) (l.attn == AttnKind::sliding ? any_sliding : any_full) = true;
    s.rope = rope_of(any_full ? "full_attention" : "sliding_attention", any_full ? AttnKind::full : AttnKind::sliding);
    s.rope_local = any_sliding ? rope_of("sliding_attention", AttnKind::sliding) : s.rope;
}

// The sampling defaults `run` takes from generation_config.json (cli/model_args.cpp): checked
// here, once, so an archive never carries a field of the wrong type.
void check_generation_fields(const ConfigFields& g) {
    (void)g.opt_bool("do_sample", false);
    for (const char* key : {"temperature", "top_p", "min_p", "repetition_penalty"}) (void)g.opt_num(key, 0.0);
    (void)g.opt_int("top_k", 0, 0, INT32_MAX);
}

// The spec from the text model's fields `c` (config.json itself, or its text_config); `top` is
// config.json's top level, `s` has the architecture filled in.
ModelSpec spec_from_text_config(const ConfigFields& c, const ConfigFields& top, const ConfigFields& g, bool default_tied,
                                ModelSpec s, const std::string& ctx);

}  // namespace

std::vector<std::string> supported_architectures() {
    std::vector<std::string> out;
    for (const auto& a : k_archs) out.emplace_back(a.hf_name);
    return out;
}

ModelSpec spec_from_hf_config(const nlohmann::json& config, const nlohmann::json& generation, const std::string& ctx,
                              const std::string& generation_ctx) {
    if (!config.is_object()) fail("{}: not a JSON object", ctx);
    const ConfigFields c(config, ctx), g(generation, generation_ctx);
    const auto archs = c.has("architectures") ? c.opt_str_list("architectures") : std::nullopt;
    if (!archs || archs->empty()) fail("{}: no 'architectures' entry; cannot tell which model this is", ctx);
    const std::string hf_arch = archs->front();
    const ArchEntry* entry = nullptr;
    for (const auto& a : k_archs)
        if (hf_arch == a.hf_name) entry = &a;
    if (!entry)
        fail("{}: unsupported architecture '{}' (supported: {})", ctx, hf_arch, fmt::join(supported_architectures(), ", "));

    ModelSpec s;
    s.arch = entry->arch;
    s.hf_architecture = hf_arch;
    // An image-text checkpoint keeps the text model's configuration in text_config; the special
    // tokens and tie_word_embeddings may sit at either level (the text level wins).
    std::optional<ConfigFields> text;
    if (hf_arch.ends_with("ForConditionalGeneration")) {
        text = c.opt_object("text_config");
        if (!text) fail("{}: {} keeps the text model's configuration in 'text_config', which is missing", ctx, hf_arch);
    }
    const ConfigFields& top = c;
    return spec_from_text_config(text ? *text : top, top, g, entry->default_tied, std::move(s), ctx);
}

namespace {
ModelSpec spec_from_text_config(const ConfigFields& c, const ConfigFields& top, const ConfigFields& g, bool default_tied,
                                ModelSpec s, const std::string& ctx) {
    s.n_layers = int(c.req_int("num_hidden_layers", 1, spec_limits::layers));
    s.hidden_dim = int(c.req_int("hidden_size", 1, spec_limits::width));
    s.n_heads = int(c.req_int("num_attention_heads", 1, spec_limits::heads));
    s.n_kv_heads = int(c.opt_int("num_key_value_heads", s.n_heads, 1, spec_limits::heads));
    s.head_dim = int(c.opt_int("head_dim", s.hidden_dim / s.n_heads, 1, spec_limits::head_dim));
    // Qwen3.5-MoE: every layer is a mixture of experts, and the config has no dense width.
    s.ffn_dim = s.arch == Arch::qwen3_5_moe ? int(c.opt_int("intermediate_size", 0, 0, spec_limits::width))
                                            : int(c.req_int("intermediate_size", 1, spec_limits::width));
    s.vocab_size = int(c.req_int("vocab_size", 1, spec_limits::vocab));
    s.max_context = int(c.opt_int("max_position_embeddings", 2048, 1, spec_limits::positions));
    s.norm_eps = float(c.opt_num("rms_norm_eps", 1e-6));
    s.tied_embeddings = c.opt_bool("tie_word_embeddings", top.opt_bool("tie_word_embeddings", default_tied));
    s.attn_scale = float(1.0 / std::sqrt(double(s.head_dim)));

    const bool attention_bias = c.opt_bool("attention_bias", false);
    switch (s.arch) {
    case Arch::qwen2: s.qkv_bias = true; break;  // Qwen2 always has q/k/v biases and no o bias
    case Arch::phi3: break;                      // Phi-3 projections have no biases
    default: s.qkv_bias = s.o_bias = attention_bias; break;
    }
    s.mlp_bias = c.opt_bool("mlp_bias", false);
    s.qk_norm = s.arch == Arch::qwen3 || s.arch == Arch::qwen3_moe || s.arch == Arch::gemma3 || is_qwen3_5(s.arch) ||
                s.arch == Arch::gemma4;

    // Activation of the gated MLP.
    const std::string act = c.has("hidden_activation") ? c.opt_str("hidden_activation", "") : c.opt_str("hidden_act", "silu");
    if (act == "silu" || act == "swish") s.activation = Activation::silu;
    else if (act == "gelu_pytorch_tanh" || act == "gelu_tanh") s.activation = Activation::gelu_tanh;
    else fail("{}: activation '{}' is not supported (supported: silu, gelu_pytorch_tanh)", ctx, act);

    // Which layers use a sliding window.
    int window = int(c.opt_int("sliding_window", 0, 0, spec_limits::positions));
    if ((s.arch == Arch::qwen2 || s.arch == Arch::qwen3 || s.arch == Arch::qwen3_moe) && !c.opt_bool("use_sliding_window", false))
        window = 0;  // Qwen configs carry a sliding_window that is off unless use_sliding_window
    const auto layer_types = c.opt_str_list("layer_types");
    if (layer_types && int(layer_types->size()) != s.n_layers)
        fail("{}: 'layer_types' must list {} layers, lists {}", ctx, s.n_layers, layer_types->size());
    s.layers.assign(size_t(s.n_layers), LayerSpec{});
    if (layer_types) {
        for (int i = 0; i < s.n_layers; ++i) {
            const std::string& t = (*layer_types)[size_t(i)];
            if (t == "sliding_attention") s.layers[size_t(i)].attn = window > 0 ? AttnKind::sliding : AttnKind::full;
            else if (t == "linear_attention" && is_qwen3_5(s.arch)) s.layers[size_t(i)].mixer = MixerKind::delta_net;
            else if (t != "full_attention") fail("{}: layer type '{}' is not supported", ctx, t);
        }
    } else if (s.arch == Arch::gemma3) {
        // Older Gemma 3 configs: every sliding_window_pattern-th layer is global.
        const int pattern = int(c.opt_int("sliding_window_pattern", c.opt_int("_sliding_window_pattern", 6, 0, spec_limits::layers), 0, spec_limits::layers));
        for (int i = 0; i < s.n_layers; ++i)
            s.layers[size_t(i)].attn = (pattern > 0 && (i + 1) % pattern == 0) || window <= 0 ? AttnKind::full : AttnKind::sliding;
    } else if (window > 0) {
        for (auto& l : s.layers) l.attn = AttnKind::sliding;  // Mistral / Mixtral / Phi-3: every layer
    }
    bool any_sliding = false;
    for (const auto& l : s.layers) any_sliding |= l.attn == AttnKind::sliding;
    if (s.arch == Arch::qwen3_moe || s.arch == Arch::mixtral || s.arch == Arch::qwen3_5_moe) parse_moe(c, s);
    if (is_qwen3_5(s.arch)) {
        // Qwen3_5GatedDeltaNet's sizes (only read when a layer is linear attention).
        if (s.has_delta_net()) {
            DeltaNetSpec& d = s.delta_net;
            d.n_k_heads = int(c.req_int("linear_num_key_heads", 1, spec_limits::heads));
            d.n_v_heads = int(c.req_int("linear_num_value_heads", 1, spec_limits::heads));
            d.k_head_dim = int(c.req_int("linear_key_head_dim", 1, spec_limits::head_dim));
            d.v_head_dim = int(c.req_int("linear_value_head_dim", 1, spec_limits::head_dim));
            d.conv_kernel = int(c.req_int("linear_conv_kernel_dim", 1, spec_limits::conv_kernel));
        }
        // Qwen3_5Attention: q_proj holds [query | gate] per head; Qwen3_5RMSNorm is (1 + w).
        s.attn_output_gate = true;
        s.norm_weight_offset = 1.0f;
    }
    s.sliding_window = any_sliding ? window : 0;

    // RoPE. Gemma 3 has one parameter set per layer type.
    const double prf = c.opt_num("partial_rotary_factor", 1.0);
    const auto rp = c.opt_object("rope_parameters");
    const nlohmann::json v4 = rp ? nlohmann::json() : rope_params_v4(c, "rope_theta");
    const ConfigFields v4_fields(v4, ctx, "rope_scaling.");
    const ConfigFields& main_rope = rp ? *rp : v4_fields;
    if (s.arch == Arch::gemma3) {
        if (rp && rp->has("full_attention")) {
            const ConfigFields full = *rp->opt_object("full_attention");
            const auto local = rp->opt_object("sliding_attention");
            s.rope = parse_rope(full, s.head_dim, prf, s.max_context);
            s.rope_local = parse_rope(local ? *local : full, s.head_dim, prf, s.max_context);
        } else {
            const nlohmann::json local = {{"rope_theta", c.opt_num("rope_local_base_freq", 10000.0)}, {"rope_type", "default"}};
            s.rope = parse_rope(main_rope, s.head_dim, prf, s.max_context);
            s.rope_local = parse_rope(ConfigFields(local, ctx, "rope_local_base_freq."), s.head_dim, prf, s.max_context);
        }
    } else if (s.arch != Arch::gemma4) {
        s.rope = parse_rope(main_rope, s.head_dim, prf, s.max_context);
        s.rope_local = s.rope;
    }
    if (s.arch == Arch::gemma4) parse_gemma4(c, s, ctx);

    if (s.arch == Arch::gemma3) {
        s.norm_weight_offset = 1.0f;
        s.sandwich_norm = true;
        // note: transformers keeps embed_scale as a tensor in the weights' dtype; the runtime rounds
        // it to the stored dtype the same way.
        s.embed_scale = float(std::sqrt(double(s.hidden_dim)));
        s.attn_scale = float(1.0 / std::sqrt(c.opt_num("query_pre_attn_scalar", double(s.head_dim))));
        s.attn_softcap = float(c.opt_num("attn_logit_softcapping", 0.0));
        s.final_softcap = float(c.opt_num("final_logit_softcapping", 0.0));
    }

    // Special tokens: generation_config.json wins over config.json, as in transformers' generate().
    // note: both files are read (and checked) even when generation_config.json decides.
    auto ids = [&](const char* key) {
        auto from_config = c.opt_int_list(key, 0, spec_limits::token_id);
        if (!from_config && &c != &top) from_config = top.opt_int_list(key, 0, spec_limits::token_id);
        auto v = g.opt_int_list(key, 0, spec_limits::token_id);
        return v ? v : from_config;
    };
    if (const auto bos = ids("bos_token_id")) s.bos_token_id = bos->empty() ? -1 : int(bos->front());
    if (const auto eos = ids("eos_token_id")) s.eos_token_ids.assign(eos->begin(), eos->end());
    check_generation_fields(g);

    validate_spec(s, ctx);
    return s;
}
}  // namespace

}  // namespace tt
