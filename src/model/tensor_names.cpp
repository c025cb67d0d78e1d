#include "model/tensor_names.h"

#include "core/error.h"

#include <fmt/format.h>

namespace tt {

namespace {

// The one table. {} in a name is the layer index. Rows apply to every architecture unless an
// override below names another HF source for that architecture.
struct NameRow {
    Role role;
    const char* internal;
    const char* hf;
};
constexpr NameRow k_names[] = {
    {Role::token_embd, "token_embd.weight", "model.embed_tokens.weight"},
    {Role::output_norm, "output_norm.weight", "model.norm.weight"},
    {Role::output, "output.weight", "lm_head.weight"},
    {Role::attn_norm, "blk.{}.attn_norm.weight", "model.layers.{}.input_layernorm.weight"},
    {Role::attn_q, "blk.{}.attn_q.weight", "model.layers.{}.self_attn.q_proj.weight"},
    {Role::attn_k, "blk.{}.attn_k.weight", "model.layers.{}.self_attn.k_proj.weight"},
    {Role::attn_v, "blk.{}.attn_v.weight", "model.layers.{}.self_attn.v_proj.weight"},
    {Role::attn_o, "blk.{}.attn_output.weight", "model.layers.{}.self_attn.o_proj.weight"},
    {Role::attn_q_bias, "blk.{}.attn_q.bias", "model.layers.{}.self_attn.q_proj.bias"},
    {Role::attn_k_bias, "blk.{}.attn_k.bias", "model.layers.{}.self_attn.k_proj.bias"},
    {Role::attn_v_bias, "blk.{}.attn_v.bias", "model.layers.{}.self_attn.v_proj.bias"},
    {Role::attn_o_bias, "blk.{}.attn_output.bias", "model.layers.{}.self_attn.o_proj.bias"},
    {Role::attn_q_norm, "blk.{}.attn_q_norm.weight", "model.layers.{}.self_attn.q_norm.weight"},
    {Role::attn_k_norm, "blk.{}.attn_k_norm.weight", "model.layers.{}.self_attn.k_norm.weight"},
    {Role::attn_post_norm, "blk.{}.attn_post_norm.weight", "model.layers.{}.post_attention_layernorm.weight"},
    {Role::ffn_norm, "blk.{}.ffn_norm.weight", "model.layers.{}.post_attention_layernorm.weight"},
    {Role::ffn_post_norm, "blk.{}.ffn_post_norm.weight", "model.layers.{}.post_feedforward_layernorm.weight"},
    {Role::ffn_gate, "blk.{}.ffn_gate.weight", "model.layers.{}.mlp.gate_proj.weight"},
    {Role::ffn_up, "blk.{}.ffn_up.weight", "model.layers.{}.mlp.up_proj.weight"},
    {Role::ffn_down, "blk.{}.ffn_down.weight", "model.layers.{}.mlp.down_proj.weight"},
    {Role::ffn_gate_bias, "blk.{}.ffn_gate.bias", "model.layers.{}.mlp.gate_proj.bias"},
    {Role::ffn_up_bias, "blk.{}.ffn_up.bias", "model.layers.{}.mlp.up_proj.bias"},
    {Role::ffn_down_bias, "blk.{}.ffn_down.bias", "model.layers.{}.mlp.down_proj.bias"},
    // The second {} of an expert's name is the expert index.
    {Role::moe_router, "blk.{}.ffn_gate_inp.weight", "model.layers.{}.mlp.gate.weight"},
    {Role::expert_gate, "blk.{}.expert.{}.ffn_gate.weight", "model.layers.{}.mlp.experts.{}.gate_proj.weight"},
    {Role::expert_up, "blk.{}.expert.{}.ffn_up.weight", "model.layers.{}.mlp.experts.{}.up_proj.weight"},
    {Role::expert_down, "blk.{}.expert.{}.ffn_down.weight", "model.layers.{}.mlp.experts.{}.down_proj.weight"},
    {Role::shexp_gate, "blk.{}.ffn_gate_shexp.weight", "model.layers.{}.mlp.shared_expert.gate_proj.weight"},
    {Role::shexp_up, "blk.{}.ffn_up_shexp.weight", "model.layers.{}.mlp.shared_expert.up_proj.weight"},
    {Role::shexp_down, "blk.{}.ffn_down_shexp.weight", "model.layers.{}.mlp.shared_expert.down_proj.weight"},
    {Role::shexp_gate_inp, "blk.{}.ffn_gate_inp_shexp.weight", "model.layers.{}.mlp.shared_expert_gate.weight"},
    {Role::ssm_in_qkv, "blk.{}.ssm_in_qkv.weight", "model.layers.{}.linear_attn.in_proj_qkv.weight"},
    {Role::ssm_in_z, "blk.{}.ssm_in_z.weight", "model.layers.{}.linear_attn.in_proj_z.weight"},
    {Role::ssm_in_b, "blk.{}.ssm_in_b.weight", "model.layers.{}.linear_attn.in_proj_b.weight"},
    {Role::ssm_in_a, "blk.{}.ssm_in_a.weight", "model.layers.{}.linear_attn.in_proj_a.weight"},
    {Role::ssm_conv, "blk.{}.ssm_conv.weight", "model.layers.{}.linear_attn.conv1d.weight"},
    {Role::ssm_dt_bias, "blk.{}.ssm_dt_bias", "model.layers.{}.linear_attn.dt_bias"},
    {Role::ssm_a_log, "blk.{}.ssm_a_log", "model.layers.{}.linear_attn.A_log"},
    {Role::ssm_norm, "blk.{}.ssm_norm.weight", "model.layers.{}.linear_attn.norm.weight"},
    {Role::ssm_out, "blk.{}.ssm_out.weight", "model.layers.{}.linear_attn.out_proj.weight"},
    {Role::per_layer_token_embd, "per_layer_token_embd.weight", "model.embed_tokens_per_layer.weight"},
    {Role::per_layer_model_proj, "per_layer_model_proj.weight", "model.per_layer_model_projection.weight"},
    {Role::per_layer_proj_norm, "per_layer_proj_norm.weight", "model.per_layer_projection_norm.weight"},
    {Role::per_layer_gate, "blk.{}.per_layer_gate.weight", "model.layers.{}.per_layer_input_gate.weight"},
    {Role::per_layer_proj, "blk.{}.per_layer_proj.weight", "model.layers.{}.per_layer_projection.weight"},
    {Role::per_layer_post_norm, "blk.{}.per_layer_post_norm.weight", "model.layers.{}.post_per_layer_input_norm.weight"},
    {Role::layer_scalar, "blk.{}.layer_scalar", "model.layers.{}.layer_scalar"},
};

// Architectures whose HF checkpoints name a role differently.
struct OverrideRow {
    Arch arch;
    Role role;
    const char* hf;
};
constexpr OverrideRow k_overrides[] = {
    // Gemma's post_attention_layernorm normalizes the attention output (sandwich norm); the pre-MLP
    // norm is pre_feedforward_layernorm.
    {Arch::gemma3, Role::ffn_norm, "model.layers.{}.pre_feedforward_layernorm.weight"},
    {Arch::gemma4, Role::ffn_norm, "model.layers.{}.pre_feedforward_layernorm.weight"},
    // Phi-3's fused projections (split by rows, see TensorPlan::hf_row_begin).
    {Arch::phi3, Role::attn_q, "model.layers.{}.self_attn.qkv_proj.weight"},
    {Arch::phi3, Role::attn_k, "model.layers.{}.self_attn.qkv_proj.weight"},
    {Arch::phi3, Role::attn_v, "model.layers.{}.self_attn.qkv_proj.weight"},
    {Arch::phi3, Role::ffn_gate, "model.layers.{}.mlp.gate_up_proj.weight"},
    {Arch::phi3, Role::ffn_up, "model.layers.{}.mlp.gate_up_proj.weight"},
    // Mixtral's block_sparse_moe: w1 is the gate, w3 the up and w2 the down projection.
    {Arch::mixtral, Role::moe_router, "model.layers.{}.block_sparse_moe.gate.weight"},
    {Arch::mixtral, Role::expert_gate, "model.layers.{}.block_sparse_moe.experts.{}.w1.weight"},
    {Arch::mixtral, Role::expert_up, "model.layers.{}.block_sparse_moe.experts.{}.w3.weight"},
    {Arch::mixtral, Role::expert_down, "model.layers.{}.block_sparse_moe.experts.{}.w2.weight"},
};

// Fused experts: transformers v5's experts modules (modeling_qwen3_5_moe.py's Qwen3_5MoeExperts,
// and Qwen3-MoE's and Mixtral's alike) hold a layer's routed experts as two 3-D parameters, and
// checkpoints stored from them as they are (the published Qwen3.5-MoE ones) hold those. Expert e's
// gate_proj is gate_up_proj[e] rows [0, ffn), its up_proj rows [ffn, 2 * ffn) (the forward chunks
// `linear(x, gate_up_proj[e])` in two, gate first), and its down_proj is down_proj[e]; every matrix
// is [out, in] as nn.Linear's weight, so each expert's is a contiguous run of rows.
// note: transformers' conversion_mapping.py builds the same tensors from per-expert checkpoints
// (stacked on a new dim 0, then gate and up concatenated on dim 1; Mixtral's w1 before w3), and
// renames Mixtral's block_sparse_moe to mlp, its router with it. Its "transposed" experts
// ([n, hidden, 2 * ffn], `experts_are_transposed`) belong to architectures not converted here.
enum class FusedPart { gate_rows, up_rows, down };
struct FusedRow {
    Role role;
    const char* hf;
    FusedPart part;
};
constexpr FusedRow k_fused_experts[] = {
    {Role::expert_gate, "model.layers.{}.mlp.experts.gate_up_proj", FusedPart::gate_rows},
    {Role::expert_up, "model.layers.{}.mlp.experts.gate_up_proj", FusedPart::up_rows},
    {Role::expert_down, "model.layers.{}.mlp.experts.down_proj", FusedPart::down},
};
constexpr OverrideRow k_fused_overrides[] = {
    {Arch::mixtral, Role::moe_router, "model.layers.{}.mlp.gate.weight"},
};
constexpr std::string_view k_gate_up_layout =
    "[n_experts, 2 * expert_ffn, hidden]: per expert its gate_proj rows, then its up_proj rows";
constexpr std::string_view k_down_layout = "[n_experts, hidden, expert_ffn]: per expert its down_proj";

const NameRow& row(Role r) {
    for (const auto& n : k_names)
        if (n.role == r) return n;
    TT_ASSERT(false, "role {} has no name", int(r));
}

// The pattern with its {} filled: the first with the layer, the second with the expert.
std::string fill(const char* pattern, int layer, int expert) {
    std::string s = pattern;
    for (int index : {layer, expert}) {
        const auto pos = s.find("{}");
        if (pos == std::string::npos) break;
        TT_ASSERT(index >= 0, "tensor {} needs a layer (and an expert) index", pattern);
        s.replace(pos, 2, std::to_string(index));
    }
    return s;
}

std::string hf_name(Arch arch, Role r, int layer, int expert) {
    for (const auto& o : k_overrides)
        if (o.arch == arch && o.role == r) return fill(o.hf, layer, expert);
    return fill(row(r).hf, layer, expert);
}

// An image-text checkpoint (Qwen3_5ForConditionalGeneration) nests the text model's weights one
// level down; its lm_head stays at the top.
constexpr std::string_view k_text_prefix = "model.", k_nested_text_prefix = "model.language_model.";
bool nested_text_model(const ModelSpec& s) { return s.hf_architecture.ends_with("ForConditionalGeneration"); }

}  // namespace

int hf_layer_index(std::string_view name) {
    // note: every per-layer row of the table (overrides included) starts with this prefix.
    const std::string_view pattern = row(Role::attn_norm).hf;
    const std::string_view prefix = pattern.substr(0, pattern.find("{}"));
    if (name.starts_with(k_nested_text_prefix)) name.remove_prefix(k_nested_text_prefix.size() - k_text_prefix.size());
    if (!name.starts_with(prefix)) return -1;
    name.remove_prefix(prefix.size());
    int64_t n = 0;
    size_t i = 0;
    for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && i < 9; ++i) n = n * 10 + (name[i] - '0');
    if (i == 0 || i >= name.size() || name[i] != '.') return -1;
    return int(n);
}

std::string_view hf_skipped_part(std::string_view name) {
    if (name.starts_with("model.visual.") || name.starts_with("visual.")) return "the vision tower";
    if (name.starts_with("mtp.")) return "the multi-token-prediction layer";
    // Gemma4ForConditionalGeneration
    if (name.starts_with("model.vision_tower.") || name.starts_with("model.embed_vision.")) return "the vision tower";
    if (name.starts_with("model.audio_tower.") || name.starts_with("model.embed_audio.")) return "the audio tower";
    return {};
}

std::string tensor_name(Role role, int layer, int expert) { return fill(row(role).internal, layer, expert); }
std::string expert_block_name(int layer, int expert) { return fmt::format("layer.{}.expert.{}", layer, expert); }

std::map<std::string, Role, std::less<>> tensor_roles(const ModelSpec& spec) {
    std::map<std::string, Role, std::less<>> roles;
    for (const TensorPlan& p : plan_tensors(spec)) {
        const bool added = roles.emplace(p.name, p.role).second;
        TT_ASSERT(added, "plan_tensors names '{}' twice", p.name);
    }
    return roles;
}

std::vector<TensorPlan> plan_tensors(const ModelSpec& s) {
    const int64_t h = s.hidden_dim, v = s.vocab_size;
    std::vector<TensorPlan> out;
    // note: the fused-matrix row offsets below are Phi-3's, whose layers all have the model's sizes.
    const int64_t pq = s.q_dim(), pkv = s.kv_dim(), pf = s.ffn_dim;
    auto add = [&](Role r, int layer, Shape shape, const std::string& block, int expert = -1) {
        TensorPlan p{r, layer, tensor_name(r, layer, expert), shape, block, hf_name(s.arch, r, layer, expert), 0, shape, "", expert, {}};
        for (const auto& fr : k_fused_experts) {
            if (fr.role != r) continue;
            const std::string fused = fill(fr.hf, layer, -1);
            const int64_t n = s.moe.n_experts, ef = s.moe.expert_ffn_dim;
            if (fr.part == FusedPart::down) p.hf_fused = {fused, {n, h, ef}, expert * h, k_down_layout};
            else p.hf_fused = {fused, {n, 2 * ef, h}, expert * 2 * ef + (fr.part == FusedPart::up_rows ? ef : 0), k_gate_up_layout};
        }
        for (const auto& o : k_fused_overrides)
            if (o.arch == s.arch && o.role == r) p.hf_fused = {fill(o.hf, layer, -1), shape, 0, {}};
        for (std::string* name : {&p.hf_name, &p.hf_fused.name})
            if (nested_text_model(s) && name->starts_with(k_text_prefix))
                *name = std::string(k_nested_text_prefix) + name->substr(k_text_prefix.size());
        if (r == Role::ssm_conv) p.hf_shape = {shape[0], 1, shape[1]};  // nn.Conv1d's [out, in / groups, kernel]
        if (s.arch == Arch::phi3) {  // rows of the fused matrices
            switch (r) {
            case Role::attn_q: p.hf_row_begin = 0; p.hf_shape = {pq + 2 * pkv, h}; break;
            case Role::attn_k: p.hf_row_begin = pq; p.hf_shape = {pq + 2 * pkv, h}; break;
            case Role::attn_v: p.hf_row_begin = pq + pkv; p.hf_shape = {pq + 2 * pkv, h}; break;
            case Role::ffn_gate: p.hf_row_begin = 0; p.hf_shape = {2 * pf, h}; break;
            case Role::ffn_up: p.hf_row_begin = pf; p.hf_shape = {2 * pf, h}; break;
            default: break;
            }
        }
        out.push_back(std::move(p));
    };
    const DeltaNetSpec& d = s.delta_net;
    add(Role::token_embd, -1, {v, h}, "embed");
    if (s.tied_embeddings) out.back().hf_alt_name = row(Role::output).hf;
    const int64_t P = s.per_layer_dim, LP = int64_t(s.n_layers) * P;
    if (P > 0) {
        add(Role::per_layer_token_embd, -1, {s.per_layer_vocab, LP}, std::string(k_per_layer_embd_block));
        add(Role::per_layer_model_proj, -1, {LP, h}, std::string(k_per_layer_block));
        add(Role::per_layer_proj_norm, -1, {P}, std::string(k_per_layer_block));
    }
    for (int il = 0; il < s.n_layers; ++il) {
        const std::string b = fmt::format("layer.{}", il);
        const int64_t q = s.layer_q_dim(il), kv = s.layer_kv_dim(il), f = s.layer_ffn_dim(il), hd = s.layer_head_dim(il);
        const LayerSpec& ls = s.layers[size_t(il)];
        const bool own_k = ls.kv_from < 0, own_v = own_k && !ls.k_eq_v;
        add(Role::attn_norm, il, {h}, b);
        if (s.is_delta_net(il)) {
            add(Role::ssm_in_qkv, il, {d.conv_dim(), h}, b);
            add(Role::ssm_in_z, il, {d.value_dim(), h}, b);
            add(Role::ssm_in_b, il, {d.n_v_heads, h}, b);
            add(Role::ssm_in_a, il, {d.n_v_heads, h}, b);
            add(Role::ssm_conv, il, {d.conv_dim(), d.conv_kernel}, b);
            add(Role::ssm_dt_bias, il, {d.n_v_heads}, b);
            add(Role::ssm_a_log, il, {d.n_v_heads}, b);
            add(Role::ssm_norm, il, {d.v_head_dim}, b);
            add(Role::ssm_out, il, {h, d.value_dim()}, b);
        } else {
            add(Role::attn_q, il, {s.layer_q_proj_rows(il), h}, b);
            if (own_k) add(Role::attn_k, il, {kv, h}, b);
            if (own_v) add(Role::attn_v, il, {kv, h}, b);
            if (s.qkv_bias) {
                add(Role::attn_q_bias, il, {q}, b);
                if (own_k) add(Role::attn_k_bias, il, {kv}, b);
                if (own_v) add(Role::attn_v_bias, il, {kv}, b);
            }
            if (s.qk_norm) {
                add(Role::attn_q_norm, il, {hd}, b);
                if (own_k) add(Role::attn_k_norm, il, {hd}, b);
            }
            add(Role::attn_o, il, {h, q}, b);
            if (s.o_bias) add(Role::attn_o_bias, il, {h}, b);
            if (s.sandwich_norm) add(Role::attn_post_norm, il, {h}, b);
        }
        add(Role::ffn_norm, il, {h}, b);
        if (s.layers[size_t(il)].ffn == FfnKind::dense) {
            add(Role::ffn_gate, il, {f, h}, b);
            add(Role::ffn_up, il, {f, h}, b);
            add(Role::ffn_down, il, {h, f}, b);
            if (s.mlp_bias) {
                add(Role::ffn_gate_bias, il, {f}, b);
                add(Role::ffn_up_bias, il, {f}, b);
                add(Role::ffn_down_bias, il, {h}, b);
            }
            if (s.sandwich_norm) add(Role::ffn_post_norm, il, {h}, b);
            if (P > 0) {
                add(Role::per_layer_gate, il, {P, h}, b);
                add(Role::per_layer_proj, il, {h, P}, b);
                add(Role::per_layer_post_norm, il, {h}, b);
            }
            if (s.layer_scalar) add(Role::layer_scalar, il, {1}, b);
            continue;
        }
        // note: no mixture-of-experts model has per-layer inputs or layer scalars (validate_spec).
        // Mixture of experts: the router and the shared expert stay in the layer's block (every
        // token reads them); each routed expert is a block of its own.
        const MoeSpec& m = s.moe;
        const int64_t ef = m.expert_ffn_dim, sf = m.shared_ffn_dim;
        add(Role::moe_router, il, {m.n_experts, h}, b);
        if (sf > 0) {
            add(Role::shexp_gate, il, {sf, h}, b);
            add(Role::shexp_up, il, {sf, h}, b);
            add(Role::shexp_down, il, {h, sf}, b);
            if (m.shared_gate) add(Role::shexp_gate_inp, il, {1, h}, b);
        }
        if (s.sandwich_norm) add(Role::ffn_post_norm, il, {h}, b);
        for (int e = 0; e < m.n_experts; ++e) {
            const std::string eb = expert_block_name(il, e);
            add(Role::expert_gate, il, {ef, h}, eb, e);
            add(Role::expert_up, il, {ef, h}, eb, e);
            add(Role::expert_down, il, {h, ef}, eb, e);
        }
    }
    add(Role::output_norm, -1, {h}, "output");
    if (!s.tied_embeddings) add(Role::output, -1, {v, h}, "output");
    return out;
}

}  // namespace tt

namespace tt {
std::string quant_scales_name(std::string_view weight_name) {
    constexpr std::string_view suffix = ".weight";
    TT_ASSERT(weight_name.ends_with(suffix), "{} is not a weight", weight_name);
    return std::string(weight_name.substr(0, weight_name.size() - suffix.size())) + ".scales";
}
}  // namespace tt
