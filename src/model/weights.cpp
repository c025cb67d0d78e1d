#include "model/weights.h"

#include "core/error.h"
#include "model/weight_quant.h"

namespace tt {

namespace {
const TensorView** slot(ModelWeights& w, Role r, int layer, int expert) {
    if (layer < 0) {
        switch (r) {
        case Role::token_embd: return &w.token_embd;
        case Role::output_norm: return &w.output_norm;
        case Role::output: return &w.output;
        case Role::per_layer_token_embd: return &w.per_layer_token_embd;
        case Role::per_layer_model_proj: return &w.per_layer_model_proj;
        case Role::per_layer_proj_norm: return &w.per_layer_proj_norm;
        default: TT_ASSERT(false);
        }
    }
    LayerWeights& l = w.layers[size_t(layer)];
    switch (r) {
    case Role::attn_norm: return &l.attn_norm;
    case Role::attn_q: return &l.wq;
    case Role::attn_k: return &l.wk;
    case Role::attn_v: return &l.wv;
    case Role::attn_o: return &l.wo;
    case Role::attn_q_bias: return &l.bq;
    case Role::attn_k_bias: return &l.bk;
    case Role::attn_v_bias: return &l.bv;
    case Role::attn_o_bias: return &l.bo;
    case Role::attn_q_norm: return &l.q_norm;
    case Role::attn_k_norm: return &l.k_norm;
    case Role::attn_post_norm: return &l.attn_post_norm;
    case Role::ffn_norm: return &l.ffn_norm;
    case Role::ffn_post_norm: return &l.ffn_post_norm;
    case Role::ffn_gate: return &l.w_gate;
    case Role::ffn_up: return &l.w_up;
    case Role::ffn_down: return &l.w_down;
    case Role::ffn_gate_bias: return &l.b_gate;
    case Role::ffn_up_bias: return &l.b_up;
    case Role::ffn_down_bias: return &l.b_down;
    case Role::moe_router: return &l.router;
    case Role::expert_gate: return &l.experts.at(size_t(expert)).gate;
    case Role::expert_up: return &l.experts.at(size_t(expert)).up;
    case Role::expert_down: return &l.experts.at(size_t(expert)).down;
    case Role::shexp_gate: return &l.shexp_gate;
    case Role::shexp_up: return &l.shexp_up;
    case Role::shexp_down: return &l.shexp_down;
    case Role::shexp_gate_inp: return &l.shexp_gate_inp;
    case Role::ssm_in_qkv: return &l.ssm_in_qkv;
    case Role::ssm_in_z: return &l.ssm_in_z;
    case Role::ssm_in_b: return &l.ssm_in_b;
    case Role::ssm_in_a: return &l.ssm_in_a;
    case Role::ssm_conv: return &l.ssm_conv;
    case Role::ssm_dt_bias: return &l.ssm_dt_bias;
    case Role::ssm_a_log: return &l.ssm_a_log;
    case Role::ssm_norm: return &l.ssm_norm;
    case Role::ssm_out: return &l.ssm_out;
    case Role::per_layer_gate: return &l.per_layer_gate;
    case Role::per_layer_proj: return &l.per_layer_proj;
    case Role::per_layer_post_norm: return &l.per_layer_post_norm;
    case Role::layer_scalar: return &l.layer_scalar;
    default: TT_ASSERT(false);
    }
}
}  // namespace

ModelWeights bind_weights(const Archive& a, const ModelSpec& spec) {
    ModelWeights w;
    w.layers.resize(size_t(spec.n_layers));
    for (int il = 0; il < spec.n_layers; ++il)
        if (spec.is_moe(il)) w.layers[size_t(il)].experts.resize(size_t(spec.moe.n_experts));
    for (const TensorPlan& p : plan_tensors(spec)) {
        const ArchiveTensor* t = a.find(p.name);
        if (!t) fail("{}: missing tensor '{}' ({} needs it)", a.path(), p.name, spec.hf_architecture);
        if (t->view.shape != p.shape)
            fail("{}: tensor '{}': expected shape {}, found {}", a.path(), p.name, shape_str(p.shape), shape_str(t->view.shape));
        if (t->view.quant != QuantScheme::none && !role_quantizable(p.role))
            fail("{}: tensor '{}' is stored as {}, but it stays in floating point in every profile (docs/QUANTIZATION.md)",
                 a.path(), p.name, quant_scheme_label(t->view.quant));
        if (t->view.quant == QuantScheme::none && !dtype_is_float(t->view.dtype))
            fail("{}: tensor '{}': expected a float dtype, found {}", a.path(), p.name, dtype_name(t->view.dtype));
        if (t->block != p.block)
            fail("{}: tensor '{}' is stored in block '{}', expected '{}'{}", a.path(), p.name, t->block, p.block,
                 // Gemma 4 archives converted before the per-layer blocks existed (tensor_names.h).
                 t->block == "embed" && (p.block == k_per_layer_embd_block || p.block == k_per_layer_block)
                     ? " (an archive written by an older ThinTensor; re-convert it)" : "");
        *slot(w, p.role, p.layer, p.expert) = &t->view;
    }
    if (spec.tied_embeddings) w.output = w.token_embd;
    return w;
}

const TensorView*& weight_slot(ModelWeights& w, const TensorPlan& p) { return *slot(w, p.role, p.layer, p.expert); }

}  // namespace tt
