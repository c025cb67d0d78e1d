// The tensor-name table: every weight the engine knows, its internal (archive) name, its Hugging
// Face source name, and its expected shape as a function of the ModelSpec. The converter and the
// loaders both read this one table (../shared/STYLE.md, "tensor names in one place").
#pragma once

#include "format/tensor.h"
#include "model/model_spec.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tt {

enum class Role {
    token_embd,      // [vocab, hidden]
    output_norm,     // [hidden]
    output,          // [vocab, hidden]; absent when embeddings are tied
    attn_norm,       // [hidden]              RMSNorm before attention
    attn_q,          // [q_dim, hidden]; [2 * q_dim, hidden] with attn_output_gate ([q_h | gate_h] per head)
    attn_k,          // [kv_dim, hidden]      absent in a KV-shared layer (LayerSpec::kv_from)
    attn_v,          // [kv_dim, hidden]      absent also with LayerSpec::k_eq_v
    attn_o,          // [hidden, q_dim]
    attn_q_bias,     // [q_dim]
    attn_k_bias,     // [kv_dim]
    attn_v_bias,     // [kv_dim]
    attn_o_bias,     // [hidden]
    attn_q_norm,     // [head_dim]            per-head RMSNorm on q
    attn_k_norm,     // [head_dim]
    attn_post_norm,  // [hidden]              sandwich: on the attention output
    ffn_norm,        // [hidden]              RMSNorm before the MLP
    ffn_post_norm,   // [hidden]              sandwich: on the MLP output
    ffn_gate,        // [ffn, hidden]
    ffn_up,          // [ffn, hidden]
    ffn_down,        // [hidden, ffn]
    ffn_gate_bias,   // [ffn]
    ffn_up_bias,     // [ffn]
    ffn_down_bias,   // [hidden]
    // Mixture-of-experts layers (FfnKind::moe) have these instead of the ffn_gate/up/down above.
    moe_router,      // [n_experts, hidden]   the router ("gate") logits
    expert_gate,     // [expert_ffn, hidden]  per expert (TensorPlan::expert)
    expert_up,       // [expert_ffn, hidden]
    expert_down,     // [hidden, expert_ffn]
    shexp_gate,      // [shared_ffn, hidden]  the shared expert (Qwen2-MoE style)
    shexp_up,        // [shared_ffn, hidden]
    shexp_down,      // [hidden, shared_ffn]
    shexp_gate_inp,  // [1, hidden]           its sigmoid gate
    // Gated DeltaNet layers (MixerKind::delta_net) have these instead of attn_q ... attn_o.
    ssm_in_qkv,      // [conv_dim, hidden]    q | k | v, before the conv
    ssm_in_z,        // [value_dim, hidden]   the output gate
    ssm_in_b,        // [v_heads, hidden]     beta = sigmoid(b)
    ssm_in_a,        // [v_heads, hidden]     the decay's input
    ssm_conv,        // [conv_dim, kernel]    depthwise causal conv (HF: [conv_dim, 1, kernel])
    ssm_dt_bias,     // [v_heads]
    ssm_a_log,       // [v_heads]
    ssm_norm,        // [v_head_dim]          the gated RMSNorm's weight (plain w)
    ssm_out,         // [hidden, value_dim]
    // Gemma 4's per-layer inputs (ModelSpec::per_layer_dim = P > 0; L = n_layers). The table is a
    // block of its own (k_per_layer_embd_block), the projection and its norm another (k_per_layer_block):
    per_layer_token_embd,  // [per_layer_vocab, L * P]  row `token`: the L per-layer embeddings side by side
    per_layer_model_proj,  // [L * P, hidden]           projects the token embedding to the L inputs
    per_layer_proj_norm,   // [P]                       RMSNorm of each projected input
    // ... and in each layer:
    per_layer_gate,        // [P, hidden]               per_layer_input_gate
    per_layer_proj,        // [hidden, P]               per_layer_projection
    per_layer_post_norm,   // [hidden]                  post_per_layer_input_norm
    layer_scalar,          // [1]                       multiplies the layer's output (ModelSpec::layer_scalar)
};

// Gemma 4's per-layer input blocks, stored right after "embed". note: the table (4.7 GB in bf16 for
// Gemma-4-E2B, one row read per token) has a block of its own so the fit planner can leave it in
// registered host memory apart from the embedding, which a tied model's head reads whole; the
// projection and its norm (read whole every token, before layer 0) are the second block.
inline constexpr std::string_view k_per_layer_embd_block = "per_layer_embd";  // per_layer_token_embd
inline constexpr std::string_view k_per_layer_block = "per_layer";            // per_layer_model_proj, per_layer_proj_norm

// Internal name: "token_embd.weight", "blk.3.attn_q.weight", "blk.3.expert.17.ffn_gate.weight", ...
std::string tensor_name(Role role, int layer = -1, int expert = -1);
// The archive block of layer il's expert e: "layer.3.expert.17". Each expert is a block of its
// own (its gate, up and down back to back), so moving one expert is one contiguous copy.
std::string expert_block_name(int layer, int expert);

struct TensorPlan {
    Role role;
    int layer;              // -1 for whole-model tensors
    std::string name;       // internal name in the archive
    Shape shape;            // expected shape
    // The contiguous group it is stored in: "embed", "per_layer_embd", "per_layer", "layer.N", "layer.N.expert.E", "output".
    std::string block;
    std::string hf_name;    // source tensor in the HF checkpoint
    // note: Phi-3 fuses q/k/v (and gate/up) into one matrix, and fused experts stack every expert
    // in one 3-D tensor; the converter cuts the slice out, so the runtime sees one layout for every
    // checkpoint. The slice is whole rows of this tensor's width (the elements of `shape` after its
    // first dimension): the HF tensor read as rows of that width, rows [hf_row_begin, hf_row_begin + shape[0]).
    int64_t hf_row_begin = 0;
    Shape hf_shape;         // the HF tensor's expected shape (differs from `shape` when sliced)
    // note: a tied checkpoint may store the shared matrix under the output head's name only
    // (safetensors drops aliases); the converter then reads it from here.
    std::string hf_alt_name;
    int expert = -1;        // expert index of the expert_* roles
    // The other source of a routed expert's tensor (and of Mixtral's router): the layer's experts
    // stored fused, as transformers v5 holds them (tensor_names.cpp, k_fused_experts). Empty name
    // where there is none. The converter picks one layout per layer and then reads this instead.
    struct FusedSource {
        std::string name;        // "model.layers.3.mlp.experts.gate_up_proj"
        Shape shape;             // the fused tensor's expected shape
        int64_t row_begin = 0;   // as hf_row_begin
        std::string_view layout; // the fused tensor's layout in words, for messages
    } hf_fused;
};

// The layer N of a per-layer Hugging Face tensor name ("model.layers.N.…", the table's prefix, or
// "model.language_model.layers.N.…" of an image-text checkpoint), or -1 for any other name: lets the converter count the layers a checkpoint holds before it
// builds a plan for the layers its config.json claims.
int hf_layer_index(std::string_view hf_name);

// The parts of an image-text checkpoint ThinTensor does not run (the vision tower, Gemma 4's
// audio tower and the embedders of both, Qwen3.5's multi-token-prediction layer): a name for the converter's info line, or empty for any other tensor.
std::string_view hf_skipped_part(std::string_view hf_name);

// Per-layer tensors are sized by the layer's own sizes (ModelSpec::layer_q_dim(il), ...).
// Every tensor the spec implies, in archive order (embed, then per layer its block and, for a
// mixture-of-experts layer, one block per expert, then output).
std::vector<TensorPlan> plan_tensors(const ModelSpec& spec);
// The role of each tensor plan_tensors(spec) names, by archive name (what role-dependent rules,
// such as which matrices a quantized profile quantizes, look archive tensors up in).
std::map<std::string, Role, std::less<>> tensor_roles(const ModelSpec& spec);

}  // namespace tt

namespace tt {
// The archive name of a quantized matrix's scales tensor: "blk.3.attn_q.weight" -> "blk.3.attn_q.scales"
// (docs/FORMAT.md, version 2).
std::string quant_scales_name(std::string_view weight_name);
}  // namespace tt
