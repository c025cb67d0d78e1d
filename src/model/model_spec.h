// ModelSpec: the normalized description of a model, one field per architectural choice.
// An architecture is a function from Hugging Face config.json to a ModelSpec (hf_config.cpp) plus
// rows in the tensor-name table (tensor_names.cpp) — never a new forward pass. The spec is stored
// in the .thin archive, so the runtime never reads config.json again.
#pragma once

#include <nlohmann/json.hpp>

#include <climits>
#include <cstddef>
#include <cstdint>

#include <string>
#include <vector>

namespace tt {

// Upper bounds on what a spec may ask for, checked when a spec is read (from config.json and from
// an archive) before any per-layer table is built: far above every released model (Llama 3.1
// 405B: 126 layers, hidden 16384, ffn 53248, 128 heads; Gemma 3: vocab 262144, head_dim 256;
// Llama 4 Scout: 10M positions), low enough that per-layer tables stay small and the int products
// of head counts and widths (q_dim = heads * head_dim) cannot overflow; element counts of whole
// tensors (rows * width) are 64-bit everywhere.
namespace spec_limits {
constexpr int64_t layers = 1024;
constexpr int64_t width = 1 << 17;      // hidden_dim, ffn_dim
constexpr int64_t heads = 1024;
constexpr int64_t head_dim = 4096;
constexpr int64_t vocab = 1 << 24;
constexpr int64_t positions = 1 << 24;  // max_context, sliding_window, rope original context
constexpr int64_t token_id = INT32_MAX;
constexpr int64_t experts = 1024;       // DeepSeek-V3: 256 routed experts
constexpr int64_t conv_kernel = 64;     // Qwen3.5's DeltaNet conv: 4
}  // namespace spec_limits

enum class Arch { llama, mistral, qwen2, qwen3, phi3, gemma3, qwen3_moe, mixtral, qwen3_5, qwen3_5_moe, gemma4 };
enum class Activation { silu, gelu_tanh };  // the gate activation of the gated MLP
enum class AttnKind { full, sliding };      // attention layers: every key, or a sliding window
// What mixes information across positions in a layer: softmax attention over a KV cache, or
// Qwen3.5's Gated DeltaNet (linear attention over a fixed-size recurrent state, DeltaNetSpec).
enum class MixerKind { attention, delta_net };
// What a layer's feed-forward half is: one gated MLP, or a mixture of experts (MoeSpec).
enum class FfnKind { dense, moe };

// One decoder layer: its mixer and its FFN. Every loop over layers (tensor plan, binder, both
// backends, the planner) reads this, so a model whose layers differ is a description, not
// another forward pass.
struct LayerSpec {
    MixerKind mixer = MixerKind::attention;
    AttnKind attn = AttnKind::full;  // attention mixers
    FfnKind ffn = FfnKind::dense;
    // Sizes that differ from the model's (transformers' per_layer_config; Gemma 4's full-attention
    // layers have a wider head_dim, its KV-shared layers a double-wide MLP); 0 = the model's.
    int head_dim = 0;
    int n_heads = 0;
    int n_kv_heads = 0;
    int ffn_dim = 0;
    // Gemma 4's KV sharing: the layer computes only queries and attends over the KV cache of layer
    // kv_from (the last earlier layer of the same attention kind with a cache of its own); it keeps
    // no cache and has no k/v weights. -1 = its own keys and values.
    int kv_from = -1;
    // Gemma 4's attention_k_eq_v (full-attention layers): no v_proj; the values are the raw key
    // projection (before k_norm and RoPE), normalised by the unweighted v-norm.
    bool k_eq_v = false;

    bool operator==(const LayerSpec&) const = default;
};

// The mixture-of-experts FFN shared by every FfnKind::moe layer (Qwen3-MoE, Mixtral, Qwen3.5-MoE):
// a router picks top_k of n_experts gated MLPs of width expert_ffn_dim per token and sums their
// outputs weighted by the router's softmax probabilities (renormalised over the kept ones when
// norm_topk). Qwen2-MoE-style models add a shared expert every token uses, of width
// shared_ffn_dim, its output scaled by sigmoid(shared_gate . x) when shared_gate.
struct MoeSpec {
    int n_experts = 0;
    int top_k = 0;
    int expert_ffn_dim = 0;
    bool norm_topk = false;
    int shared_ffn_dim = 0;   // 0 = no shared expert
    bool shared_gate = false;

    bool operator==(const MoeSpec&) const = default;
};
// The Gated DeltaNet mixer shared by every MixerKind::delta_net layer (transformers'
// Qwen3_5GatedDeltaNet): a fused q|k|v projection through a depthwise causal conv, L2-normalised
// q/k heads, a per-head decay and learning rate, a recurrent state S [v_heads, k_head_dim,
// v_head_dim] in place of a KV cache, and an output gated by silu(z) after an RMSNorm.
struct DeltaNetSpec {
    int n_k_heads = 0;    // linear_num_key_heads (q and k)
    int n_v_heads = 0;    // linear_num_value_heads (a multiple of n_k_heads)
    int k_head_dim = 0;   // linear_key_head_dim
    int v_head_dim = 0;   // linear_value_head_dim
    int conv_kernel = 0;  // linear_conv_kernel_dim

    int key_dim() const { return n_k_heads * k_head_dim; }
    int value_dim() const { return n_v_heads * v_head_dim; }
    int conv_dim() const { return 2 * key_dim() + value_dim(); }
    // One layer's recurrent state, f32: S [v_heads, k_head_dim, v_head_dim] and the conv's last
    // kernel - 1 inputs [conv_dim, kernel - 1].
    size_t state_floats() const { return size_t(n_v_heads) * size_t(k_head_dim) * size_t(v_head_dim); }
    size_t conv_state_floats() const { return size_t(conv_dim()) * size_t(conv_kernel > 0 ? conv_kernel - 1 : 0); }
    uint64_t state_bytes() const { return 4 * uint64_t(state_floats() + conv_state_floats()); }
    bool operator==(const DeltaNetSpec&) const = default;
};
// proportional: Gemma 4's partial RoPE. The whole head is paired the rotate_half way (rotary_dim ==
// head_dim), the first rotated_pairs pairs turn at theta^(-2i / head_dim) (the exponent over the
// whole head, not over the rotated part) and the others have frequency 0 (cos 1, sin 0: left as
// they are); transformers' _compute_proportional_rope_parameters.
enum class RopeScaling { none, linear, llama3, yarn, proportional };

struct RopeSpec {
    double theta = 10000.0;          // base of the inverse frequencies
    int rotary_dim = 0;              // dims of each head that are rotated (partial rotary < head_dim)
    RopeScaling scaling = RopeScaling::none;
    double factor = 1.0;             // linear / llama3 / yarn scale factor
    // llama3: wavelengths above original_max/low_freq_factor are divided by factor, those below
    // original_max/high_freq_factor are kept, and the band between is interpolated.
    double low_freq_factor = 1.0;
    double high_freq_factor = 4.0;
    int original_max_position = 0;   // llama3 / yarn: the pre-training context
    // yarn: ramp between beta_fast and beta_slow rotations; cos/sin are scaled by attention_factor.
    double beta_fast = 32.0;
    double beta_slow = 1.0;
    double attention_factor = 1.0;
    bool truncate = true;            // yarn: floor/ceil the ramp bounds (transformers' default)
    int rotated_pairs = 0;           // proportional: frequency pairs that rotate (< rotary_dim / 2)

    bool operator==(const RopeSpec&) const = default;
};

struct ModelSpec {
    Arch arch = Arch::llama;
    std::string hf_architecture;     // e.g. "LlamaForCausalLM", for messages and provenance

    // Dimensions.
    int n_layers = 0;
    int hidden_dim = 0;              // residual stream width
    int n_heads = 0;                 // query heads
    int n_kv_heads = 0;              // key/value heads (GQA when < n_heads)
    int head_dim = 0;                // may differ from hidden_dim / n_heads (Qwen3, Gemma 3)
    int ffn_dim = 0;                 // MLP intermediate width of dense layers
    int vocab_size = 0;
    int max_context = 0;             // max_position_embeddings

    // Normalization: RMSNorm everywhere; y = x / rms(x) * (w + norm_weight_offset).
    float norm_eps = 1e-6f;
    float norm_weight_offset = 0.0f; // 1 for Gemma's (1 + w) norms
    bool qk_norm = false;            // RMSNorm over head_dim on q and k before RoPE (Qwen3, Gemma 3)
    bool sandwich_norm = false;      // Gemma: norms after attention and after the MLP, before the residual add
    bool v_norm = false;             // Gemma 4: RMSNorm without weight over head_dim on v

    // Attention.
    bool qkv_bias = false;           // biases on q/k/v projections (Qwen2, Llama attention_bias)
    bool o_bias = false;             // bias on the output projection (Llama attention_bias)
    // Qwen3.5: q_proj yields each head's query and an output gate side by side ([q_h | gate_h],
    // 2 * head_dim rows a head), and the attention output is multiplied by sigmoid(gate).
    bool attn_output_gate = false;
    float attn_scale = 0.0f;         // softmax scale; 1/sqrt(head_dim) unless the config says otherwise
    float attn_softcap = 0.0f;       // tanh soft-capping of attention scores; 0 = off
    int sliding_window = 0;          // keys visible to a sliding layer, itself included; 0 = none
    std::vector<LayerSpec> layers;   // one per layer: its mixer and FFN kinds
    RopeSpec rope;                   // RoPE of full-attention layers
    RopeSpec rope_local;             // RoPE of sliding layers (== rope unless the model differs)

    // MLP: down(act(gate(x)) * up(x)), for dense layers and for each expert.
    Activation activation = Activation::silu;
    bool mlp_bias = false;
    MoeSpec moe;                     // when any layer's ffn is FfnKind::moe
    DeltaNetSpec delta_net;          // when any layer's mixer is MixerKind::delta_net

    // Embeddings and output.
    float embed_scale = 1.0f;        // multiplies the token embeddings (Gemma: sqrt(hidden_dim))
    bool tied_embeddings = false;    // the output head reuses token_embd
    float final_softcap = 0.0f;      // tanh soft-capping of the logits; 0 = off

    // Gemma 4's per-layer inputs: every layer l gets a per_layer_dim-wide input, the mean (scaled
    // by 1/sqrt 2) of row `token` of a [per_layer_vocab, n_layers * per_layer_dim] embedding
    // (scaled by sqrt(per_layer_dim)) and an RMS-normed projection of the token embedding (scaled
    // by 1/sqrt(hidden)); after its MLP, the layer adds norm(proj(gelu(gate(x)) * input_l)) to the
    // residual stream. 0 = none.
    int per_layer_dim = 0;
    int per_layer_vocab = 0;
    bool layer_scalar = false;       // Gemma 4: a stored per-layer scalar multiplies the layer's output

    // Special tokens from config.json / generation_config.json (-1 = none).
    int bos_token_id = -1;
    std::vector<int> eos_token_ids;

    // The model-wide sizes (those of every layer without a per-layer override).
    int q_dim() const { return n_heads * head_dim; }
    int q_proj_rows() const { return attn_output_gate ? 2 * q_dim() : q_dim(); }
    int kv_dim() const { return n_kv_heads * head_dim; }
    // Layer il's sizes, its LayerSpec's overrides applied.
    int layer_head_dim(int il) const { return pick(layers[size_t(il)].head_dim, head_dim); }
    int layer_n_heads(int il) const { return pick(layers[size_t(il)].n_heads, n_heads); }
    int layer_n_kv_heads(int il) const { return pick(layers[size_t(il)].n_kv_heads, n_kv_heads); }
    int layer_ffn_dim(int il) const { return pick(layers[size_t(il)].ffn_dim, ffn_dim); }
    int layer_q_dim(int il) const { return layer_n_heads(il) * layer_head_dim(il); }
    int layer_q_proj_rows(int il) const { return attn_output_gate ? 2 * layer_q_dim(il) : layer_q_dim(il); }
    int layer_kv_dim(int il) const { return layer_n_kv_heads(il) * layer_head_dim(il); }
    // True when some layer's sizes differ from the model-wide ones, or it shares another's KV.
    bool has_layer_overrides() const;
    bool sliding(int il) const { return layers[size_t(il)].attn == AttnKind::sliding; }
    bool is_moe(int il) const { return layers[size_t(il)].ffn == FfnKind::moe; }
    bool is_delta_net(int il) const { return layers[size_t(il)].mixer == MixerKind::delta_net; }
    bool is_attention(int il) const { return layers[size_t(il)].mixer == MixerKind::attention; }
    // Layers with a KV cache of their own (attention mixers that do not share another's); DeltaNet
    // layers keep a recurrent state instead, KV-shared layers nothing.
    bool has_kv(int il) const { return is_attention(il) && layers[size_t(il)].kv_from < 0; }
    // The layer whose KV cache layer il attends over (itself unless it shares).
    int kv_layer(int il) const { return layers[size_t(il)].kv_from >= 0 ? layers[size_t(il)].kv_from : il; }
    bool has_delta_net() const;
    bool has_moe() const;
    int n_moe_layers() const;
    const RopeSpec& rope_for_layer(int il) const { return sliding(il) ? rope_local : rope; }
    // Number of weights (parameters) the spec implies, and of those one token uses (every expert
    // counted in the first, top_k per MoE layer in the second; equal for dense models).
    uint64_t n_params() const;
    uint64_t n_active_params() const;

    bool operator==(const ModelSpec&) const = default;

private:
    static int pick(int layer_value, int model_value) { return layer_value > 0 ? layer_value : model_value; }
};

std::string_view arch_name(Arch a);
std::string_view activation_name(Activation a);
std::string_view rope_scaling_name(RopeScaling s);
std::string_view mixer_name(MixerKind k);
std::string_view ffn_name(FfnKind k);

// The spec as stored in the archive's metadata ("spec"), and back. from_json checks every field's
// type and range and throws tt::Error ("<context>: ...") on anything missing, unknown or
// inconsistent; `context` names the source (spec_from_archive passes "<archive path>: spec").
// The JSON carries "format_version" (k_spec_version); a spec without one is version 1 (archives
// written before layers had kinds: "layer_attn" lists attention kinds, every FFN dense), and a
// version above k_spec_version is refused as written by a newer ThinTensor. Version 3 added
// "attn_output_gate" and "delta_net" (Qwen3.5); a version 2 spec has neither. Version 4 added
// Gemma 4: per-layer sizes, "kv_from" and "k_eq_v" in "layers", "v_norm", "per_layer_dim",
// "per_layer_vocab", "layer_scalar" and the proportional RoPE's "rotated_pairs"; an older spec has
// none of them (every layer the model-wide sizes, its own KV).
inline constexpr int k_spec_version = 4;
nlohmann::json spec_to_json(const ModelSpec& s);
ModelSpec spec_from_json(const nlohmann::json& j, const std::string& context = "archive spec");
// Checks internal consistency (positive dims, heads divide, one LayerSpec per layer, MoE sizes...).
void validate_spec(const ModelSpec& s, const std::string& context);

}  // namespace tt
