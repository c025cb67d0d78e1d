#!/usr/bin/env bash
# ThinTensor alone on the random-weight shapes (no transformers run): for checking a kernel change
# quickly on the GPU machine. usage: bench/quick_bench.sh [shape...]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/bench-out}"; mkdir -p "$OUT"
source tests/gpu/libs.sh
TT=.carry/bin/thintensor
work=/tmp/ttquick; mkdir -p "$work"
shapes=("$@"); [ ${#shapes[@]} -gt 0 ] || shapes=(qwen3-0.6b llama3-8b)
for shape in "${shapes[@]}"; do
  # The checkpoint and archive stay in $work while the machine is warm, for the next call (and
  # for bench/streaming_bench.sh, bench/validate_hf.sh); QUICK_FRESH=1 makes them anew.
  if [ -n "${QUICK_FRESH:-}" ] || [ ! -f "$work/$shape/reference.safetensors" ]; then
    rm -rf "$work/$shape" "$work/$shape.thin"
    python3 bench/hf_random_model.py "$shape" "$work/$shape" "$work/$shape.json" --no-speed >/dev/null 2>&1 || { echo "checkpoint $shape failed"; continue; }
  fi
  [ -f "$work/$shape.thin" ] || $TT -q convert "$work/$shape" -o "$work/$shape.thin"
  $TT -q validate "$work/$shape.thin" --reference "$work/$shape/reference.safetensors" --key logits_f32 --device cuda --min-cosine 0.998 --no-greedy | tail -1
  echo "== $shape"
  $TT -q bench "$work/$shape.thin" --device cuda --prompt-lengths 2048 --gen-tokens 128 --reps 2 | tail -3
  # A/B knobs of the decode kernels (docs/BENCHMARKS.md): tg128 only.
  for knob in TT_PDL=0 TT_GEMV_WARPS=8 TT_GEMV_MIN_BLOCKS=1; do
    echo "$knob: $(env $knob $TT -q bench "$work/$shape.thin" --device cuda --prompt-lengths 0 --gen-tokens 128 --reps 2 | grep tg128)"
  done
done 2>&1 | tee "$OUT/quick_bench.log"
