# Sourced by tests/gpu/stage.sh (here) and tests/gpu/run.sh (on the GPU machine): the hf-tiny
# fixtures the GPU check validates on CUDA, in one list.
GPU_FIXTURES="llama mistral qwen2 qwen3 phi3 gemma3_text qwen3_moe mixtral qwen3_5_text"
