#include "model/model_spec.h"

#include "core/error.h"
#include "model/config_fields.h"

#include <fmt/format.h>

namespace tt {

namespace {
template <typename E>
struct EnumName {
    E value;
    std::string_view name;
};
constexpr EnumName<Arch> k_arch_names[] = {{Arch::llama, "llama"}, {Arch::mistral, "mistral"}, {Arch::qwen2, "qwen2"},
                                           {Arch::qwen3, "qwen3"}, {Arch::phi3, "phi3"},       {Arch::gemma3, "gemma3"},
                                           {Arch::qwen3_moe, "qwen3_moe"}, {Arch::mixtral, "mixtral"},
                                           {Arch::qwen3_5, "qwen3_5"}, {Arch::qwen3_5_moe, "qwen3_5_moe"},
                                           {Arch::gemma4, "gemma4"}};
constexpr EnumName<Activation> k_act_names[] = {{Activation::silu, "silu"}, {Activation::gelu_tanh, "gelu_tanh"}};
constexpr EnumName<RopeScaling> k_rope_names[] = {{RopeScaling::none, "none"},
                                                  {RopeScaling::linear, "linear"},
                                                  {RopeScaling::llama3, "llama3"},
                                                  {RopeScaling::yarn, "yarn"},
                                                  {RopeScaling::proportional, "proportional"}};
constexpr EnumName<AttnKind> k_attn_names[] = {{AttnKind::full, "full"}, {AttnKind::sliding, "sliding"}};
constexpr EnumName<MixerKind> k_mixer_names[] = {{MixerKind::attention, "attention"}, {MixerKind::delta_net, "delta_net"}};
constexpr EnumName<FfnKind> k_ffn_names[] = {{FfnKind::dense, "dense"}, {FfnKind::moe, "moe"}};

template <typename E, size_t N>
std::string_view to_name(const EnumName<E> (&table)[N], E v) {
    for (const auto& e : table)
        if (e.value == v) return e.name;
    TT_ASSERT(false);
}
template <typename E, size_t N>
E from_name(const EnumName<E> (&table)[N], const std::string& s, const char* what, const std::string& ctx) {
    for (const auto& e : table)
        if (e.name == s) return e.value;
    fail("{}: unknown {} '{}' (archive written by a newer ThinTensor?)", ctx, what, s);
}

nlohmann::json rope_to_json(const RopeSpec& r) {
    return {{"theta", r.theta},
            {"rotary_dim", r.rotary_dim},
            {"scaling", to_name(k_rope_names, r.scaling)},
            {"factor", r.factor},
            {"low_freq_factor", r.low_freq_factor},
            {"high_freq_factor", r.high_freq_factor},
            {"original_max_position", r.original_max_position},
            {"beta_fast", r.beta_fast},
            {"beta_slow", r.beta_slow},
            {"attention_factor", r.attention_factor},
            {"truncate", r.truncate},
            {"rotated_pairs", r.rotated_pairs}};
}

RopeSpec rope_from_json(const ConfigFields& j, int64_t version) {
    RopeSpec r;
    r.theta = j.req_num("theta");
    r.rotary_dim = int(j.req_int("rotary_dim", 0, spec_limits::head_dim));
    r.scaling = from_name(k_rope_names, j.req_str("scaling"), "rope scaling", j.file());
    r.factor = j.req_num("factor");
    r.low_freq_factor = j.req_num("low_freq_factor");
    r.high_freq_factor = j.req_num("high_freq_factor");
    r.original_max_position = int(j.req_int("original_max_position", 0, spec_limits::positions));
    r.beta_fast = j.req_num("beta_fast");
    r.beta_slow = j.req_num("beta_slow");
    r.attention_factor = j.req_num("attention_factor");
    r.truncate = j.req_bool("truncate");
    if (version >= 4) r.rotated_pairs = int(j.req_int("rotated_pairs", 0, spec_limits::head_dim));
    return r;
}
}  // namespace

std::string_view arch_name(Arch a) { return to_name(k_arch_names, a); }
std::string_view activation_name(Activation a) { return to_name(k_act_names, a); }
std::string_view rope_scaling_name(RopeScaling s) { return to_name(k_rope_names, s); }
std::string_view mixer_name(MixerKind k) { return to_name(k_mixer_names, k); }
std::string_view ffn_name(FfnKind k) { return to_name(k_ffn_names, k); }

bool ModelSpec::has_moe() const { return n_moe_layers() > 0; }
bool ModelSpec::has_delta_net() const {
    for (const auto& l : layers)
        if (l.mixer == MixerKind::delta_net) return true;
    return false;
}
bool ModelSpec::has_layer_overrides() const {
    for (const auto& l : layers)
        if (l.head_dim || l.n_heads || l.n_kv_heads || l.ffn_dim || l.kv_from >= 0 || l.k_eq_v) return true;
    return false;
}
int ModelSpec::n_moe_layers() const {
    int n = 0;
    for (const auto& l : layers) n += l.ffn == FfnKind::moe;
    return n;
}

namespace {
// Parameters of the spec with `experts_counted` experts per MoE layer.
uint64_t count_params(const ModelSpec& s, uint64_t experts_counted) {
    const uint64_t h = uint64_t(s.hidden_dim);
    auto mlp = [&](uint64_t f) { return 3 * h * f + (s.mlp_bias ? 2 * f + h : 0); };
    uint64_t n = uint64_t(s.vocab_size) * h + h;
    if (!s.tied_embeddings) n += uint64_t(s.vocab_size) * h;
    const uint64_t pl = uint64_t(s.per_layer_dim) * uint64_t(s.n_layers);
    if (pl > 0) n += uint64_t(s.per_layer_vocab) * pl + h * pl + uint64_t(s.per_layer_dim);  // table, projection, norm
    const DeltaNetSpec& d = s.delta_net;
    for (int il = 0; il < s.n_layers; ++il) {
        const LayerSpec& l = s.layers[size_t(il)];
        const uint64_t q = uint64_t(s.layer_q_dim(il)), kv = uint64_t(s.layer_kv_dim(il)), hd = uint64_t(s.layer_head_dim(il));
        uint64_t per_layer = 2 * h;  // the two norms
        if (s.per_layer_dim > 0) per_layer += 2 * h * uint64_t(s.per_layer_dim) + h;  // gate, projection, norm
        if (s.layer_scalar) per_layer += 1;
        if (l.mixer == MixerKind::delta_net) {
            const uint64_t cd = uint64_t(d.conv_dim()), vd = uint64_t(d.value_dim()), hv = uint64_t(d.n_v_heads);
            // in_proj_qkv, in_proj_z, in_proj_b/a, conv1d, dt_bias, A_log, norm, out_proj
            per_layer += h * cd + h * vd + 2 * h * hv + cd * uint64_t(d.conv_kernel) + 2 * hv + uint64_t(d.v_head_dim) + vd * h;
        } else {
            // k and v (one of them with k_eq_v, none in a KV-shared layer)
            const uint64_t n_kv_mats = l.kv_from >= 0 ? 0 : l.k_eq_v ? 1 : 2;
            per_layer += h * uint64_t(s.layer_q_proj_rows(il)) + n_kv_mats * h * kv + q * h;
            if (s.qkv_bias) per_layer += q + n_kv_mats * kv;
            if (s.o_bias) per_layer += h;
            if (s.qk_norm) per_layer += (l.kv_from >= 0 ? 1 : 2) * hd;
        }
        if (s.sandwich_norm) per_layer += 2 * h;
        if (l.ffn == FfnKind::dense) {
            per_layer += mlp(uint64_t(s.layer_ffn_dim(il)));
        } else {
            per_layer += uint64_t(s.moe.n_experts) * h + experts_counted * mlp(uint64_t(s.moe.expert_ffn_dim));
            if (s.moe.shared_ffn_dim > 0) per_layer += mlp(uint64_t(s.moe.shared_ffn_dim)) + (s.moe.shared_gate ? h : 0);
        }
        n += per_layer;
    }
    return n;
}
}  // namespace

uint64_t ModelSpec::n_params() const { return count_params(*this, uint64_t(moe.n_experts)); }
uint64_t ModelSpec::n_active_params() const { return count_params(*this, uint64_t(moe.top_k)); }

nlohmann::json spec_to_json(const ModelSpec& s) {
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& l : s.layers) {
        nlohmann::json j = {{"mixer", mixer_name(l.mixer)}, {"attn", to_name(k_attn_names, l.attn)}, {"ffn", ffn_name(l.ffn)}};
        // note: the version-4 fields are written only where they differ from their defaults, so a
        // model without them has the same spec text as before.
        if (l.head_dim) j["head_dim"] = l.head_dim;
        if (l.n_heads) j["n_heads"] = l.n_heads;
        if (l.n_kv_heads) j["n_kv_heads"] = l.n_kv_heads;
        if (l.ffn_dim) j["ffn_dim"] = l.ffn_dim;
        if (l.kv_from >= 0) j["kv_from"] = l.kv_from;
        if (l.k_eq_v) j["k_eq_v"] = true;
        layers.push_back(std::move(j));
    }
    return {{"format_version", k_spec_version},
            {"arch", arch_name(s.arch)},
            {"hf_architecture", s.hf_architecture},
            {"n_layers", s.n_layers},
            {"hidden_dim", s.hidden_dim},
            {"n_heads", s.n_heads},
            {"n_kv_heads", s.n_kv_heads},
            {"head_dim", s.head_dim},
            {"ffn_dim", s.ffn_dim},
            {"vocab_size", s.vocab_size},
            {"max_context", s.max_context},
            {"norm_eps", s.norm_eps},
            {"norm_weight_offset", s.norm_weight_offset},
            {"qk_norm", s.qk_norm},
            {"sandwich_norm", s.sandwich_norm},
            {"v_norm", s.v_norm},
            {"qkv_bias", s.qkv_bias},
            {"o_bias", s.o_bias},
            {"attn_output_gate", s.attn_output_gate},
            {"delta_net", {{"n_k_heads", s.delta_net.n_k_heads},
                           {"n_v_heads", s.delta_net.n_v_heads},
                           {"k_head_dim", s.delta_net.k_head_dim},
                           {"v_head_dim", s.delta_net.v_head_dim},
                           {"conv_kernel", s.delta_net.conv_kernel}}},
            {"attn_scale", s.attn_scale},
            {"attn_softcap", s.attn_softcap},
            {"sliding_window", s.sliding_window},
            {"layers", layers},
            {"rope", rope_to_json(s.rope)},
            {"rope_local", rope_to_json(s.rope_local)},
            {"activation", activation_name(s.activation)},
            {"mlp_bias", s.mlp_bias},
            {"moe", {{"n_experts", s.moe.n_experts},
                     {"top_k", s.moe.top_k},
                     {"expert_ffn_dim", s.moe.expert_ffn_dim},
                     {"norm_topk", s.moe.norm_topk},
                     {"shared_ffn_dim", s.moe.shared_ffn_dim},
                     {"shared_gate", s.moe.shared_gate}}},
            {"embed_scale", s.embed_scale},
            {"tied_embeddings", s.tied_embeddings},
            {"final_softcap", s.final_softcap},
            {"per_layer_dim", s.per_layer_dim},
            {"per_layer_vocab", s.per_layer_vocab},
            {"layer_scalar", s.layer_scalar},
            {"bos_token_id", s.bos_token_id},
            {"eos_token_ids", s.eos_token_ids}};
}

ModelSpec spec_from_json(const nlohmann::json& json, const std::string& ctx) {
    if (!json.is_object()) fail("{}: not a JSON object", ctx);
    // note: the ranges are those of config.json (spec_limits); the lower bounds are left to
    // validate_spec so that its messages are the same for both sources.
    using namespace spec_limits;
    const ConfigFields j(json, ctx);
    // Version 1 (no "format_version"): the spec before layers had kinds.
    const int64_t version = j.opt_int("format_version", 1, 1, INT32_MAX);
    if (version > k_spec_version)
        fail("{}: spec format version {} was written by a newer ThinTensor (this build reads versions up to {}); "
             "upgrade ThinTensor or re-convert the model with this one", ctx, version, k_spec_version);
    ModelSpec s;
    s.arch = from_name(k_arch_names, j.req_str("arch"), "architecture", ctx);
    s.hf_architecture = j.req_str("hf_architecture");
    s.n_layers = int(j.req_int("n_layers", 0, layers));
    s.hidden_dim = int(j.req_int("hidden_dim", 0, width));
    s.n_heads = int(j.req_int("n_heads", 0, heads));
    s.n_kv_heads = int(j.req_int("n_kv_heads", 0, heads));
    s.head_dim = int(j.req_int("head_dim", 0, spec_limits::head_dim));
    s.ffn_dim = int(j.req_int("ffn_dim", 0, width));
    s.vocab_size = int(j.req_int("vocab_size", 0, vocab));
    s.max_context = int(j.req_int("max_context", 0, positions));
    s.norm_eps = float(j.req_num("norm_eps"));
    s.norm_weight_offset = float(j.req_num("norm_weight_offset"));
    s.qk_norm = j.req_bool("qk_norm");
    s.sandwich_norm = j.req_bool("sandwich_norm");
    if (version >= 4) s.v_norm = j.req_bool("v_norm");
    s.qkv_bias = j.req_bool("qkv_bias");
    s.o_bias = j.req_bool("o_bias");
    if (version >= 3) {
        s.attn_output_gate = j.req_bool("attn_output_gate");
        const ConfigFields d = j.req_object("delta_net");
        s.delta_net.n_k_heads = int(d.req_int("n_k_heads", 0, heads));
        s.delta_net.n_v_heads = int(d.req_int("n_v_heads", 0, heads));
        s.delta_net.k_head_dim = int(d.req_int("k_head_dim", 0, spec_limits::head_dim));
        s.delta_net.v_head_dim = int(d.req_int("v_head_dim", 0, spec_limits::head_dim));
        s.delta_net.conv_kernel = int(d.req_int("conv_kernel", 0, conv_kernel));
    }
    s.attn_scale = float(j.req_num("attn_scale"));
    s.attn_softcap = float(j.req_num("attn_softcap"));
    s.sliding_window = int(j.req_int("sliding_window", 0, positions));
    if (version == 1) {
        const auto kinds = j.opt_str_list("layer_attn");
        if (!kinds) fail("{}: missing 'layer_attn'", ctx);
        if (int(kinds->size()) != s.n_layers) fail("{}: {} layer types for {} layers", ctx, kinds->size(), s.n_layers);
        for (const auto& k : *kinds) s.layers.push_back({MixerKind::attention, from_name(k_attn_names, k, "layer kind", ctx), FfnKind::dense});
    } else {
        const nlohmann::json* layers_json = j.find("layers");
        if (!layers_json || !layers_json->is_array()) fail("{}: missing 'layers' (a list of layer descriptions)", ctx);
        if (int64_t(layers_json->size()) != s.n_layers) fail("{}: {} layer types for {} layers", ctx, layers_json->size(), s.n_layers);
        for (size_t i = 0; i < layers_json->size(); ++i) {
            const std::string lctx = fmt::format("{}: layers[{}]", ctx, i);
            if (!(*layers_json)[i].is_object()) fail("{}: not an object", lctx);
            const ConfigFields l((*layers_json)[i], ctx, fmt::format("layers[{}].", i));
            LayerSpec ls{from_name(k_mixer_names, l.req_str("mixer"), "layer mixer", lctx),
                         from_name(k_attn_names, l.req_str("attn"), "attention kind", lctx),
                         from_name(k_ffn_names, l.req_str("ffn"), "layer FFN kind", lctx)};
            if (version >= 4) {
                ls.head_dim = int(l.opt_int("head_dim", 0, 0, spec_limits::head_dim));
                ls.n_heads = int(l.opt_int("n_heads", 0, 0, heads));
                ls.n_kv_heads = int(l.opt_int("n_kv_heads", 0, 0, heads));
                ls.ffn_dim = int(l.opt_int("ffn_dim", 0, 0, width));
                ls.kv_from = int(l.opt_int("kv_from", -1, -1, layers - 1));
                ls.k_eq_v = l.opt_bool("k_eq_v", false);
            }
            s.layers.push_back(ls);
        }
    }
    s.rope = rope_from_json(j.req_object("rope"), version);
    s.rope_local = rope_from_json(j.req_object("rope_local"), version);
    s.activation = from_name(k_act_names, j.req_str("activation"), "activation", ctx);
    s.mlp_bias = j.req_bool("mlp_bias");
    if (version >= 2) {
        const ConfigFields m = j.req_object("moe");
        s.moe.n_experts = int(m.req_int("n_experts", 0, experts));
        s.moe.top_k = int(m.req_int("top_k", 0, experts));
        s.moe.expert_ffn_dim = int(m.req_int("expert_ffn_dim", 0, width));
        s.moe.norm_topk = m.req_bool("norm_topk");
        s.moe.shared_ffn_dim = int(m.req_int("shared_ffn_dim", 0, width));
        s.moe.shared_gate = m.req_bool("shared_gate");
    }
    s.embed_scale = float(j.req_num("embed_scale"));
    s.tied_embeddings = j.req_bool("tied_embeddings");
    s.final_softcap = float(j.req_num("final_softcap"));
    if (version >= 4) {
        s.per_layer_dim = int(j.req_int("per_layer_dim", 0, width));
        s.per_layer_vocab = int(j.req_int("per_layer_vocab", 0, vocab));
        s.layer_scalar = j.req_bool("layer_scalar");
    }
    s.bos_token_id = int(j.req_int("bos_token_id", -1, token_id));
    const auto eos = j.opt_int_list("eos_token_ids", 0, token_id);
    if (!eos) fail("{}: missing 'eos_token_ids'", ctx);
    s.eos_token_ids.assign(eos->begin(), eos->end());
    validate_spec(s, ctx);
    return s;
}

void validate_spec(const ModelSpec& s, const std::string& ctx) {
    auto positive = [&](int v, const char* name) {
        if (v <= 0) fail("{}: {} must be positive, got {}", ctx, name, v);
    };
    positive(s.n_layers, "num_hidden_layers");
    positive(s.hidden_dim, "hidden_size");
    positive(s.n_heads, "num_attention_heads");
    positive(s.n_kv_heads, "num_key_value_heads");
    positive(s.head_dim, "head_dim");
    bool any_dense = false;
    for (const auto& l : s.layers) any_dense |= l.ffn == FfnKind::dense;
    if (any_dense || s.layers.empty()) positive(s.ffn_dim, "intermediate_size");
    positive(s.vocab_size, "vocab_size");
    positive(s.max_context, "max_position_embeddings");
    if (s.n_heads % s.n_kv_heads != 0)
        fail("{}: num_attention_heads {} is not a multiple of num_key_value_heads {}", ctx, s.n_heads, s.n_kv_heads);
    if (int(s.layers.size()) != s.n_layers)
        fail("{}: {} layer types for {} layers", ctx, s.layers.size(), s.n_layers);
    if (s.has_moe()) {
        const MoeSpec& m = s.moe;
        if (m.n_experts <= 0) fail("{}: num_experts must be positive in a mixture-of-experts model, got {}", ctx, m.n_experts);
        if (m.top_k <= 0 || m.top_k > m.n_experts)
            fail("{}: num_experts_per_tok {} must be between 1 and num_experts {}", ctx, m.top_k, m.n_experts);
        if (m.expert_ffn_dim <= 0) fail("{}: the experts' intermediate size must be positive, got {}", ctx, m.expert_ffn_dim);
        if (m.shared_ffn_dim < 0) fail("{}: shared_expert_intermediate_size must not be negative", ctx);
        if (m.shared_gate && m.shared_ffn_dim == 0) fail("{}: a shared-expert gate without a shared expert", ctx);
    } else if (s.moe != MoeSpec{}) {
        fail("{}: mixture-of-experts sizes given but no layer is a mixture of experts", ctx);
    }
    if (s.has_delta_net()) {
        const DeltaNetSpec& d = s.delta_net;
        positive(d.n_k_heads, "linear_num_key_heads");
        positive(d.n_v_heads, "linear_num_value_heads");
        positive(d.k_head_dim, "linear_key_head_dim");
        positive(d.v_head_dim, "linear_value_head_dim");
        positive(d.conv_kernel, "linear_conv_kernel_dim");
        if (d.n_v_heads % d.n_k_heads != 0)
            fail("{}: linear_num_value_heads {} is not a multiple of linear_num_key_heads {}", ctx, d.n_v_heads, d.n_k_heads);
    } else if (s.delta_net != DeltaNetSpec{}) {
        fail("{}: linear-attention sizes given but no layer is a linear-attention layer", ctx);
    }
    for (int il = 0; il < s.n_layers; ++il) {
        const LayerSpec& l = s.layers[size_t(il)];
        for (int v : {l.head_dim, l.n_heads, l.n_kv_heads, l.ffn_dim})
            if (v < 0) fail("{}: layer {}: a per-layer size is negative ({})", ctx, il, v);
        if (s.layer_n_heads(il) % s.layer_n_kv_heads(il) != 0)
            fail("{}: layer {}: num_attention_heads {} is not a multiple of num_key_value_heads {}", ctx, il,
                 s.layer_n_heads(il), s.layer_n_kv_heads(il));
        if (l.kv_from >= 0) {
            // The source must come first (it is computed earlier in the pass), keep a cache and match
            // the layer's attention kind and K/V geometry.
            if (l.kv_from >= il || !s.has_kv(l.kv_from))
                fail("{}: layer {} shares the KV cache of layer {}, which is not an earlier layer with a cache of its own", ctx, il, l.kv_from);
            if (!s.is_attention(il) || s.layers[size_t(l.kv_from)].attn != l.attn ||
                s.layer_kv_dim(l.kv_from) != s.layer_kv_dim(il) || s.layer_head_dim(l.kv_from) != s.layer_head_dim(il))
                fail("{}: layer {} shares the KV cache of layer {}, whose attention kind or key/value sizes differ", ctx, il, l.kv_from);
        }
        if (l.k_eq_v && l.kv_from >= 0) fail("{}: layer {}: k_eq_v on a layer that shares another's keys and values", ctx, il);
        if (s.is_attention(il)) {
            const RopeSpec& r = s.rope_for_layer(il);
            if (r.rotary_dim > s.layer_head_dim(il))
                fail("{}: layer {}: rotary dimension {} exceeds its head_dim {}", ctx, il, r.rotary_dim, s.layer_head_dim(il));
        }
    }
    if ((s.per_layer_dim > 0 || s.layer_scalar || s.has_layer_overrides()) && (s.has_moe() || s.has_delta_net()))
        fail("{}: per-layer inputs, layer scalars and per-layer sizes are not supported with mixture-of-experts or "
             "linear-attention layers", ctx);
    if ((s.per_layer_dim > 0) != (s.per_layer_vocab > 0))
        fail("{}: per-layer inputs need both hidden_size_per_layer_input and vocab_size_per_layer_input (got {} and {})", ctx,
             s.per_layer_dim, s.per_layer_vocab);
    for (const RopeSpec* r : {&s.rope, &s.rope_local}) {
        if (r->rotary_dim <= 0 || r->rotary_dim > spec_limits::head_dim || r->rotary_dim % 2 != 0)
            fail("{}: rotary dimension {} must be even and positive", ctx, r->rotary_dim);
        if (r->scaling == RopeScaling::proportional && (r->rotated_pairs < 0 || r->rotated_pairs > r->rotary_dim / 2))
            fail("{}: proportional rope rotates {} pairs of {}", ctx, r->rotated_pairs, r->rotary_dim / 2);
        if (!(r->theta > 0)) fail("{}: rope theta must be positive", ctx);
        if (r->scaling != RopeScaling::none && !(r->factor > 0)) fail("{}: rope scaling factor must be positive", ctx);
        if ((r->scaling == RopeScaling::llama3 || r->scaling == RopeScaling::yarn) && r->original_max_position <= 0)
            fail("{}: rope scaling {} needs original_max_position_embeddings", ctx, rope_scaling_name(r->scaling));
    }
    for (const auto& l : s.layers)
        if (l.attn == AttnKind::sliding && s.sliding_window <= 0) fail("{}: sliding layer without a sliding_window", ctx);
    if (!(s.norm_eps > 0)) fail("{}: rms_norm_eps must be positive", ctx);
    // note: the BOS id is fed to the embedding lookup, so it must be a row of it; EOS ids are only
    // compared with sampled ids, and tiny test configs keep their parent's (out-of-vocab) ones.
    if (s.bos_token_id >= s.vocab_size)
        fail("{}: bos_token_id {} is outside the vocabulary (vocab_size {})", ctx, s.bos_token_id, s.vocab_size);
    if (!(s.attn_scale > 0)) fail("{}: attention scale must be positive", ctx);
}

}  // namespace tt
