#!/usr/bin/env bash
# The issue #6 benchmark in one GPU-machine call: the Llama-3-8B shape (random bf16 weights made by
# transformers, ~16 GB) converted, then ThinTensor resident and under --vram-budget 8GiB and 4GiB
# (plan, then bench: tg32 and pp2048), the PCIe bound from host-to-device pinned bandwidth measured
# in the same run, transformers + accelerate offload with the same GPU budgets, and the bit-identity
# check of streamed against resident logits on this model. Binaries from .carry/ (tests/gpu/stage.sh).
# Results: $OUT/streaming.md (tables), $OUT/streaming.log, JSON files.
# usage: bench/streaming_bench.sh [CHECKPOINT_DIR]   (default: make one in $BENCH_WORK)
#   STEPS="convert thintensor hf identity" (default: all) runs a subset, e.g. in a second call.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/stream-out}"; mkdir -p "$OUT"
source tests/gpu/libs.sh
TT=.carry/bin/thintensor
work=${BENCH_WORK:-/tmp/ttstream}; mkdir -p "$work"
export THINTENSOR_HOME="$work/home"
ck=${1:-$work/llama3-8b}; arc="$work/llama3-8b.thin"
steps=" ${STEPS:-convert thintensor hf identity} "
budgets=(8GiB 4GiB)
log="$OUT/streaming.log"
{
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv,noheader
free -g | head -2
if [[ $steps == *" convert "* ]]; then
  if [ ! -f "$ck/config.json" ]; then
    echo "=== checkpoint: random Llama-3-8B shape (transformers' init, bf16)"
    PYTHONUNBUFFERED=1 python3 bench/hf_random_model.py llama3-8b "$ck" "$OUT/hf-ckpt.json" --no-speed || { echo "checkpoint step failed"; exit 1; }
  fi
  echo "=== convert"
  /usr/bin/time -f "convert wall %e s" $TT -q convert "$ck" -o "$arc" 2>&1 | tail -1
  echo "=== doctor (ceilings for the planner, recorded in \$THINTENSOR_HOME/doctor.json)"
  $TT doctor --device 0 --cache-test-mib 0 --python-timeout 60 --json >"$OUT/doctor.json" 2>/dev/null
  python3 -c "import json; r=json.load(open('$THINTENSOR_HOME/doctor.json'))['gpus'][0]; print('doctor: h2d pinned %.1f GB/s, d2d %.0f GB/s, gemm %.0f TFLOP/s' % (r['h2d_pinned_gbs'], r['d2d_gbs'], r['gemm_bf16_tflops']))"
fi
if [[ $steps == *" thintensor "* ]]; then
  for b in resident "${budgets[@]}"; do
    flag=(); [ "$b" = resident ] || flag=(--vram-budget "$b")
    echo "=== plan $b"
    $TT plan "$arc" "${flag[@]}" --context 2049 | tail -n 30
    $TT plan "$arc" "${flag[@]}" --context 2049 --json >"$OUT/plan-$b.json"
    echo "=== bench $b"
    reps=3; [ "$b" = resident ] || reps=2
    $TT bench "$arc" --device cuda "${flag[@]}" --prompt-lengths 2048 --gen-tokens 32 --reps $reps --json >"$OUT/bench-$b.json" 2>"$OUT/bench-$b.err"
    grep -E "^plan:|warning" "$OUT/bench-$b.err"
    python3 bench/tg_summary.py "$OUT/bench-$b.json" 2>/dev/null || tail -5 "$OUT/bench-$b.err"
  done
fi
if [[ $steps == *" hf "* ]]; then
  for b in "${budgets[@]}"; do
    echo "=== transformers + accelerate offload, max_memory {0: $b, cpu: 100GiB}"
    PYTHONUNBUFFERED=1 timeout 240 python3 bench/hf_offload.py "$ck" "$b" "$OUT/hf-offload-$b.json" --gen 8 || echo "accelerate step failed (see above)"
  done
fi
if [[ $steps == *" identity "* ]]; then
  echo "=== bit identity: streamed vs resident logits on the 8B shape"
  TT_STREAM_ARCHIVES="$arc" TT_STREAM_BUDGETS=8GiB,4GiB .carry/bin/gpu_tests --gtest_filter='Streaming.*' 2>&1 | tail -n 20
fi
echo "=== summary"
python3 bench/streaming_summary.py "$OUT" | tee "$OUT/streaming.md"
} 2>&1 | tee "$log"
