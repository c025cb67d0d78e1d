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
cp -r ../shared/fixtures ../shared/models .carry/shared/
rm -rf .carry/shared/fixtures/tokenizer-ref .carry/shared/fixtures/chat-template-ref
du -sh .carry
