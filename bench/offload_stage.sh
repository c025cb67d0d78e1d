#!/usr/bin/env bash
# Run here (not on the GPU machine): fills the folder bench/offload_bench.sh reads there, as
# bench/moe_stage.sh does for the MoE benchmark, with the Llama-3 tokenizer instead of Qwen3's:
# bin/thintensor (stripped) + lib/ (the shared libraries the machine lacks), the llama.cpp anchor
# (anchors/: source tarball + build script), tokenizers/llama3/ (for the HF -> GGUF conversion).
# usage: bench/offload_stage.sh [build-dir] [dest]   (default: build .carry; dest is emptied first)
set -euo pipefail
STAGE_TOKENIZERS=llama3 exec bash "$(dirname "$0")/moe_stage.sh" "$@"
