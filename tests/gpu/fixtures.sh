# Sourced by tests/gpu/stage.sh (here) and tests/gpu/run.sh (on the GPU machine): the hf-tiny
# fixtures the GPU check validates on CUDA, in one list.
# qwen3_5_moe_text: Qwen3.5-MoE, the one fixture with a (gated) shared expert; no Qwen2-MoE fixture exists.
# gemma4_text: per-layer inputs, layer scalars, KV sharing, head_dim 16 / 32 (the materialized-score path).
GPU_FIXTURES="llama mistral qwen2 qwen3 phi3 gemma3_text qwen3_moe mixtral qwen3_5_text qwen3_5_moe_text gemma4_text"
