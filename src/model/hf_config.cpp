#include "model/hf_config.h"

#include "core/error.h"

#include <fmt/ranges.h>

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
};

// config["key"] when present and not null.
const nlohmann::json* get(const nlohmann::json& j, const char* key) {
    if (!j.is_object()) return nullptr;
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
}

int req_int(const nlohmann::json& c, const char* key, const std::string& ctx) {
    const auto* v = get(c, key);
    if (!v) fail("{}: missing '{}'", ctx, key);
    if (!v->is_number_integer()) fail("{}: '{}' must be an integer, got {}", ctx, key, v->dump());
    return v->get<int>();
}

int opt_int(const nlohmann::json& c, const char* key, int dflt, const std::string& ctx) {
    const auto* v = get(c, key);
    if (!v) return dflt;
    if (!v->is_number_integer()) fail("{}: '{}' must be an integer, got {}", ctx, key, v->dump());
    return v->get<int>();
}

double opt_num(const nlohmann::json& c, const char* key, double dflt, const std::string& ctx) {
    const auto* v = get(c, key);
    if (!v) return dflt;
    if (!v->is_number()) fail("{}: '{}' must be a number, got {}", ctx, key, v->dump());
    return v->get<double>();
}

// transformers' get_mscale for yarn.
double yarn_mscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0; }

// One rope parameter set: transformers 5 "rope_parameters" entries, or v4's rope_theta +
// rope_scaling merged into the same shape by the caller.
RopeSpec parse_rope(const nlohmann::json& p, int head_dim, double partial_rotary_factor, int max_pos,
                    const std::string& ctx) {
    RopeSpec r;
    r.theta = opt_num(p, "rope_theta", 10000.0, ctx);
    const double prf = opt_num(p, "partial_rotary_factor", partial_rotary_factor, ctx);
    r.rotary_dim = int(head_dim * prf);
    std::string type = "default";
    if (const auto* t = get(p, "rope_type")) type = t->get<std::string>();
    else if (const auto* t2 = get(p, "type")) type = t2->get<std::string>();  // older configs
    if (type == "default") {
        r.scaling = RopeScaling::none;
    } else if (type == "linear") {
        r.scaling = RopeScaling::linear;
        r.factor = opt_num(p, "factor", 1.0, ctx);
    } else if (type == "llama3") {
        r.scaling = RopeScaling::llama3;
        r.factor = opt_num(p, "factor", 1.0, ctx);
        r.low_freq_factor = opt_num(p, "low_freq_factor", 1.0, ctx);
        r.high_freq_factor = opt_num(p, "high_freq_factor", 4.0, ctx);
        r.original_max_position = opt_int(p, "original_max_position_embeddings", 0, ctx);
    } else if (type == "yarn") {
        r.scaling = RopeScaling::yarn;
        r.factor = opt_num(p, "factor", 1.0, ctx);
        r.beta_fast = opt_num(p, "beta_fast", 32.0, ctx);
        r.beta_slow = opt_num(p, "beta_slow", 1.0, ctx);
        r.truncate = get(p, "truncate") ? p["truncate"].get<bool>() : true;
        r.original_max_position = opt_int(p, "original_max_position_embeddings", max_pos, ctx);
        // note: as transformers does, the default attention factor uses max_pos / original when the
        // config names the original context, and `factor` otherwise.
        const double mscale_factor = get(p, "original_max_position_embeddings") ? double(max_pos) / r.original_max_position : r.factor;
        if (const auto* af = get(p, "attention_factor")) {
            r.attention_factor = af->get<double>();
        } else {
            const double m = opt_num(p, "mscale", 0.0, ctx), m_all = opt_num(p, "mscale_all_dim", 0.0, ctx);
            r.attention_factor = (m != 0 && m_all != 0) ? yarn_mscale(mscale_factor, m) / yarn_mscale(mscale_factor, m_all)
                                                        : yarn_mscale(mscale_factor, 1.0);
        }
    } else {
        fail("{}: rope type '{}' is not supported (supported: default, linear, llama3, yarn)", ctx, type);
    }
    return r;
}

// transformers 5 writes "rope_parameters"; v4 writes rope_theta + rope_scaling at the top level.
nlohmann::json rope_params_v4(const nlohmann::json& c, const char* theta_key) {
    nlohmann::json p = nlohmann::json::object();
    if (const auto* s = get(c, "rope_scaling")) p = *s;
    if (const auto* t = get(c, theta_key)) p["rope_theta"] = *t;
    return p;
}

}  // namespace

std::vector<std::string> supported_architectures() {
    std::vector<std::string> out;
    for (const auto& a : k_archs) out.emplace_back(a.hf_name);
    return out;
}

ModelSpec spec_from_hf_config(const nlohmann::json& c, const nlohmann::json& gen, const std::string& ctx) {
    if (!c.is_object()) fail("{}: not a JSON object", ctx);
    const auto* archs = get(c, "architectures");
    if (!archs || !archs->is_array() || archs->empty() || !(*archs)[0].is_string())
        fail("{}: no 'architectures' entry; cannot tell which model this is", ctx);
    const std::string hf_arch = (*archs)[0].get<std::string>();
    const ArchEntry* entry = nullptr;
    for (const auto& a : k_archs)
        if (hf_arch == a.hf_name) entry = &a;
    if (!entry)
        fail("{}: unsupported architecture '{}' (supported: {})", ctx, hf_arch, fmt::join(supported_architectures(), ", "));

    ModelSpec s;
    s.arch = entry->arch;
    s.hf_architecture = hf_arch;
    s.n_layers = req_int(c, "num_hidden_layers", ctx);
    s.hidden_dim = req_int(c, "hidden_size", ctx);
    s.n_heads = req_int(c, "num_attention_heads", ctx);
    s.n_kv_heads = opt_int(c, "num_key_value_heads", s.n_heads, ctx);
    if (s.n_heads <= 0) fail("{}: num_attention_heads must be positive", ctx);
    s.head_dim = opt_int(c, "head_dim", s.hidden_dim / s.n_heads, ctx);
    s.ffn_dim = req_int(c, "intermediate_size", ctx);
    s.vocab_size = req_int(c, "vocab_size", ctx);
    s.max_context = opt_int(c, "max_position_embeddings", 2048, ctx);
    s.norm_eps = float(opt_num(c, "rms_norm_eps", 1e-6, ctx));
    s.tied_embeddings = get(c, "tie_word_embeddings") ? c["tie_word_embeddings"].get<bool>() : entry->default_tied;
    s.attn_scale = float(1.0 / std::sqrt(double(s.head_dim)));

    const bool attention_bias = get(c, "attention_bias") && c["attention_bias"].get<bool>();
    switch (s.arch) {
    case Arch::qwen2: s.qkv_bias = true; break;  // Qwen2 always has q/k/v biases and no o bias
    case Arch::phi3: break;                      // Phi-3 projections have no biases
    default: s.qkv_bias = s.o_bias = attention_bias; break;
    }
    s.mlp_bias = get(c, "mlp_bias") && c["mlp_bias"].get<bool>();
    s.qk_norm = s.arch == Arch::qwen3 || s.arch == Arch::gemma3;

    // Activation of the gated MLP.
    std::string act = "silu";
    if (const auto* a = get(c, "hidden_activation")) act = a->get<std::string>();
    else if (const auto* a2 = get(c, "hidden_act")) act = a2->get<std::string>();
    if (act == "silu" || act == "swish") s.activation = Activation::silu;
    else if (act == "gelu_pytorch_tanh" || act == "gelu_tanh") s.activation = Activation::gelu_tanh;
    else fail("{}: activation '{}' is not supported (supported: silu, gelu_pytorch_tanh)", ctx, act);

    // Which layers use a sliding window.
    int window = opt_int(c, "sliding_window", 0, ctx);
    if ((s.arch == Arch::qwen2 || s.arch == Arch::qwen3) && !(get(c, "use_sliding_window") && c["use_sliding_window"].get<bool>()))
        window = 0;  // Qwen configs carry a sliding_window that is off unless use_sliding_window
    s.layer_attn.assign(size_t(s.n_layers), AttnKind::full);
    if (const auto* lt = get(c, "layer_types")) {
        if (!lt->is_array() || int(lt->size()) != s.n_layers)
            fail("{}: 'layer_types' must list {} layers", ctx, s.n_layers);
        for (int i = 0; i < s.n_layers; ++i) {
            const std::string t = (*lt)[size_t(i)].get<std::string>();
            if (t == "sliding_attention") s.layer_attn[size_t(i)] = window > 0 ? AttnKind::sliding : AttnKind::full;
            else if (t != "full_attention") fail("{}: layer type '{}' is not supported", ctx, t);
        }
    } else if (s.arch == Arch::gemma3) {
        // Older Gemma 3 configs: every sliding_window_pattern-th layer is global.
        const int pattern = opt_int(c, "sliding_window_pattern", opt_int(c, "_sliding_window_pattern", 6, ctx), ctx);
        for (int i = 0; i < s.n_layers; ++i)
            s.layer_attn[size_t(i)] = (pattern > 0 && (i + 1) % pattern == 0) || window <= 0 ? AttnKind::full : AttnKind::sliding;
    } else if (window > 0) {
        s.layer_attn.assign(size_t(s.n_layers), AttnKind::sliding);  // Mistral / Phi-3: every layer
    }
    bool any_sliding = false;
    for (auto k : s.layer_attn) any_sliding |= k == AttnKind::sliding;
    s.sliding_window = any_sliding ? window : 0;

    // RoPE. Gemma 3 has one parameter set per layer type.
    const double prf = opt_num(c, "partial_rotary_factor", 1.0, ctx);
    const auto* rp = get(c, "rope_parameters");
    if (s.arch == Arch::gemma3) {
        nlohmann::json full, local;
        if (rp && get(*rp, "full_attention")) {
            full = (*rp)["full_attention"];
            local = get(*rp, "sliding_attention") ? (*rp)["sliding_attention"] : full;
        } else {
            full = rp ? *rp : rope_params_v4(c, "rope_theta");
            local = nlohmann::json{{"rope_theta", opt_num(c, "rope_local_base_freq", 10000.0, ctx)}, {"rope_type", "default"}};
        }
        s.rope = parse_rope(full, s.head_dim, prf, s.max_context, ctx);
        s.rope_local = parse_rope(local, s.head_dim, prf, s.max_context, ctx);
    } else {
        s.rope = parse_rope(rp ? *rp : rope_params_v4(c, "rope_theta"), s.head_dim, prf, s.max_context, ctx);
        s.rope_local = s.rope;
    }

    if (s.arch == Arch::gemma3) {
        s.norm_weight_offset = 1.0f;
        s.sandwich_norm = true;
        // note: transformers keeps embed_scale as a tensor in the weights' dtype; the runtime rounds
        // it to the stored dtype the same way.
        s.embed_scale = float(std::sqrt(double(s.hidden_dim)));
        s.attn_scale = float(1.0 / std::sqrt(opt_num(c, "query_pre_attn_scalar", double(s.head_dim), ctx)));
        s.attn_softcap = float(opt_num(c, "attn_logit_softcapping", 0.0, ctx));
        s.final_softcap = float(opt_num(c, "final_logit_softcapping", 0.0, ctx));
    }

    // Special tokens: generation_config.json wins over config.json, as in transformers' generate().
    auto read_ids = [&](const nlohmann::json& src, const char* key, std::vector<int>& out) {
        const auto* v = get(src, key);
        if (!v) return false;
        out.clear();
        if (v->is_array()) {
            for (const auto& e : *v) out.push_back(e.get<int>());
        } else {
            out.push_back(v->get<int>());
        }
        return true;
    };
    std::vector<int> bos;
    if (read_ids(gen, "bos_token_id", bos) || read_ids(c, "bos_token_id", bos)) s.bos_token_id = bos.empty() ? -1 : bos[0];
    if (!read_ids(gen, "eos_token_id", s.eos_token_ids)) read_ids(c, "eos_token_id", s.eos_token_ids);

    validate_spec(s, ctx);
    return s;
}

}  // namespace tt
