#!/usr/bin/env bash
# Seeds the archive fuzz corpus (dir $1) with real .thin files converted from ../shared fixtures.
# The fuzz build's own binaries are instrumented libraries only, so this uses a normal build's
# thintensor: $THINTENSOR, else build/thintensor (the README's build command makes it).
set -euo pipefail
corpus="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
shared="${TT_SHARED_DIR:-$root/../shared}"
bin="${THINTENSOR:-$root/build/thintensor}"
if [ ! -x "$bin" ]; then
  echo "seed_fuzz_archive.sh: no thintensor binary at $bin (build it first, or set THINTENSOR)" >&2
  exit 1
fi
"$bin" -q convert "$shared/fixtures/hf-tiny/qwen2" --dtype bf16 --out "$corpus/seed_qwen2_bf16.thin"
"$bin" -q convert "$shared/fixtures/hf-tiny/gemma3_text" --dtype f16 --out "$corpus/seed_gemma3_f16.thin"
"$bin" -q convert "$shared/models/stories260K/hf" --dtype bf16 \
  --tokenizer "$shared/models/stories260K/tok512.bin" --out "$corpus/seed_stories260K.thin"
