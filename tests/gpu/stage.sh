#!/usr/bin/env bash
# Run here (not on the GPU machine): copies the built binaries, the shared libraries they need
# beyond glibc and CUDA, the transformers helper, the reference data and the benchmark scripts into .carry/ (git-ignored),
# which the device call names in `carry`. Usage: tests/gpu/stage.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
rm -rf .carry && mkdir -p .carry/bin .carry/lib .carry/shared
cp "$build/thintensor" "$build/tests/gpu_tests" .carry/bin/
cp tools/thintensor_hf.py .carry/bin/  # the transformers helper, found beside the binary
ldd "$build/thintensor" | awk '/=> \// {print $3}' | grep -v -E 'libc\.so|libm\.so|libstdc\+\+|libgcc_s|libpthread|librt|libdl|ld-linux|cuda' \
  | while read -r lib; do cp -L "$lib" .carry/lib/; done
# Only what tests/gpu/run.sh reads: the fixtures of the architectures it checks, TinyStories-656K and
# stories260K's HF folder with its tokenizer (a call carries at most 64 MiB with the tree).
mkdir -p .carry/shared/fixtures/hf-tiny .carry/shared/models/stories260K
source tests/gpu/fixtures.sh
for m in $GPU_FIXTURES; do cp -r ../shared/fixtures/hf-tiny/$m .carry/shared/fixtures/hf-tiny/; done
cp -r ../shared/models/tinystories-656k .carry/shared/models/
mkdir -p .carry/shared/tokenizers && cp -r ../shared/tokenizers/qwen3 ../shared/tokenizers/gemma3 .carry/shared/tokenizers/  # tests/gpu/qwen3_5.sh's chat model; bench/gemma4_cpu_check.sh
cp -r ../shared/models/stories260K/hf ../shared/models/stories260K/tok512.bin .carry/shared/models/stories260K/
strip .carry/bin/thintensor .carry/bin/gpu_tests
# Binaries and libraries travel xz-compressed (a third of their size); run.sh unpacks them.
tar -C .carry -cf - bin lib | xz -T0 -6 >.carry/payload.tar.xz && rm -rf .carry/bin .carry/lib
du -sh .carry
