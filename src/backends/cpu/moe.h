// The CPU reference of a mixture-of-experts FFN's routing (transformers' Qwen3MoeSparseMoeBlock /
// MixtralSparseMoeBlock): softmax over the router logits in f32, the top-k experts in torch.topk's
// order, the kept probabilities renormalised to sum 1 when the model says so. The CPU backend
// routes with this, and the CUDA routing kernel is tested against it (tests/gpu/).
#pragma once

#include <cstdint>

namespace tt::cpu {

// For one token: logits [n_experts] -> ids [top_k] (descending probability; equal probabilities
// keep the lower expert index first, as torch.topk does on CPU and CUDA) and weights [top_k].
void moe_route(const float* logits, int n_experts, int top_k, bool norm_topk, int32_t* ids, float* weights);

// sigmoid(x), the gate of a Qwen2-MoE-style shared expert.
float sigmoid(float x);

}  // namespace tt::cpu
