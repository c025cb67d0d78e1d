// Binds the archive's tensors to the roles the forward pass uses, checking each one's dtype and
// shape against the spec ("expected ... found ..."). Backends read weights only through this.
#pragma once

#include "format/archive.h"
#include "model/model_spec.h"
#include "model/tensor_names.h"

#include <array>
#include <vector>

namespace tt {

// One routed expert of a mixture-of-experts layer: a gated MLP, its three matrices back to back
// in one archive block.
struct ExpertWeights {
    const TensorView* gate = nullptr;  // [expert_ffn, hidden]
    const TensorView* up = nullptr;    // [expert_ffn, hidden]
    const TensorView* down = nullptr;  // [hidden, expert_ffn]
};

struct LayerWeights {
    const TensorView* attn_norm = nullptr;       // [hidden]
    const TensorView* wq = nullptr;              // [q_proj_rows, hidden]
    const TensorView* wk = nullptr;              // [kv_dim, hidden] (null in a KV-shared layer)
    const TensorView* wv = nullptr;              // [kv_dim, hidden] (null also with k_eq_v)
    const TensorView* wo = nullptr;              // [hidden, q_dim]
    const TensorView* bq = nullptr;              // [q_dim]   (qkv_bias)
    const TensorView* bk = nullptr;              // [kv_dim]
    const TensorView* bv = nullptr;              // [kv_dim]
    const TensorView* bo = nullptr;              // [hidden]  (o_bias)
    const TensorView* q_norm = nullptr;          // [head_dim] (qk_norm)
    const TensorView* k_norm = nullptr;          // [head_dim]
    const TensorView* attn_post_norm = nullptr;  // [hidden]  (sandwich_norm)
    const TensorView* ffn_norm = nullptr;        // [hidden]
    const TensorView* ffn_post_norm = nullptr;   // [hidden]  (sandwich_norm)
    const TensorView* w_gate = nullptr;          // [ffn, hidden]
    const TensorView* w_up = nullptr;            // [ffn, hidden]
    const TensorView* w_down = nullptr;          // [hidden, ffn]
    const TensorView* b_gate = nullptr;          // [ffn]     (mlp_bias)
    const TensorView* b_up = nullptr;            // [ffn]
    const TensorView* b_down = nullptr;          // [hidden]
    // FfnKind::moe layers (instead of w_gate/w_up/w_down):
    const TensorView* router = nullptr;          // [n_experts, hidden]
    std::vector<ExpertWeights> experts;          // [n_experts]
    const TensorView* shexp_gate = nullptr;      // [shared_ffn, hidden] (shared expert)
    const TensorView* shexp_up = nullptr;        // [shared_ffn, hidden]
    const TensorView* shexp_down = nullptr;      // [hidden, shared_ffn]
    const TensorView* shexp_gate_inp = nullptr;  // [1, hidden]          (shared_gate)
    // MixerKind::delta_net layers (instead of wq ... wo; DeltaNetSpec's sizes):
    const TensorView* ssm_in_qkv = nullptr;      // [conv_dim, hidden]
    const TensorView* ssm_in_z = nullptr;        // [value_dim, hidden]
    const TensorView* ssm_in_b = nullptr;        // [v_heads, hidden]
    const TensorView* ssm_in_a = nullptr;        // [v_heads, hidden]
    const TensorView* ssm_conv = nullptr;        // [conv_dim, kernel]
    const TensorView* ssm_dt_bias = nullptr;     // [v_heads]
    const TensorView* ssm_a_log = nullptr;       // [v_heads]
    const TensorView* ssm_norm = nullptr;        // [v_head_dim]
    const TensorView* ssm_out = nullptr;         // [hidden, value_dim]
    // Gemma 4 (ModelSpec::per_layer_dim = P, layer_scalar):
    const TensorView* per_layer_gate = nullptr;      // [P, hidden]
    const TensorView* per_layer_proj = nullptr;      // [hidden, P]
    const TensorView* per_layer_post_norm = nullptr; // [hidden]
    const TensorView* layer_scalar = nullptr;        // [1]
};

struct ModelWeights {
    const TensorView* token_embd = nullptr;  // [vocab, hidden]
    const TensorView* output_norm = nullptr; // [hidden]
    const TensorView* output = nullptr;      // [vocab, hidden]; == token_embd when tied
    // Gemma 4's per-layer inputs (ModelSpec::per_layer_dim = P > 0, L = n_layers):
    const TensorView* per_layer_token_embd = nullptr;  // [per_layer_vocab, L * P]
    const TensorView* per_layer_model_proj = nullptr;  // [L * P, hidden]
    const TensorView* per_layer_proj_norm = nullptr;   // [P]
    std::vector<LayerWeights> layers;
};

// Throws tt::Error naming the archive and the tensor on a missing tensor or a dtype/shape mismatch
// (a quantized tensor is accepted only in a role model/weight_quant.h lets be quantized).
ModelWeights bind_weights(const Archive& archive, const ModelSpec& spec);
// The field of `w` that holds the tensor of plan entry p (load-time quantization rebinds it).
const TensorView*& weight_slot(ModelWeights& w, const TensorPlan& p);

}  // namespace tt
