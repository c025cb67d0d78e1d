#!/usr/bin/env bash
# Decode A/B on the GPU machine: GEMV prefetch modes (TT_GEMV_MODE 0/1/2) x programmatic dependent
# launch (TT_PDL 1/0), tg64 on the Llama-3-8B and Qwen3-0.6B shapes. See docs/BENCHMARKS.md.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/bench-out}"; mkdir -p "$OUT"
source tests/gpu/libs.sh
TT=.carry/bin/thintensor
work=/tmp/ttexp; mkdir -p "$work"
for shape in qwen3-0.6b llama3-8b; do
  python3 bench/hf_random_model.py "$shape" "$work/$shape" "$work/$shape.json" --no-speed >/dev/null 2>&1 || { echo "checkpoint $shape failed"; continue; }
  $TT -q convert "$work/$shape" -o "$work/$shape.thin" && rm -rf "$work/$shape"
  for pdl in 1 0; do
    for mode in 0 1 2; do
      TT_PDL=$pdl TT_GEMV_MODE=$mode $TT -q bench "$work/$shape.thin" --device cuda --prompt-lengths 0 --gen-tokens 64 \
          --reps 2 --bandwidth 4200 --gemm-tflops 790 --json >"$work/r.json" 2>"$work/r.err"
      r=$(python3 bench/tg_summary.py "$work/r.json" 2>&1 || tail -2 "$work/r.err")
      echo "$shape pdl=$pdl gemv_mode=$mode: $r"
    done
  done
done 2>&1 | tee "$OUT/gemv_experiment.log"
