#!/usr/bin/env bash
# Per-kernel profile of decode steps with Nsight Compute on the GPU machine (kernel durations, DRAM
# throughput, occupancy, registers): what the next round of decode tuning starts from.
# usage: [NCU_SKIP=N NCU_COUNT=M] [BENCH_ARGS="--profile max-max-perf"] bench/profile_decode.sh [shape...];
# results in $OUT/ncu-<shape>.csv. BENCH_ARGS go to `thintensor bench` (e.g. a quantized profile).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/bench-out}"; mkdir -p "$OUT"
TT=${TT:-$PWD/.carry/bin/thintensor}  # TT=path profiles another build (an older commit for a before/after)
source tests/gpu/libs.sh
# Which kernels: a decode step of a deep model (Gemma 4: ~250 launches) after a long first prefill
# needs more than the defaults.
skip=${NCU_SKIP:-400}; count=${NCU_COUNT:-300}
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
work=/tmp/ttprof; mkdir -p "$work"
shapes=("$@"); [ ${#shapes[@]} -gt 0 ] || shapes=(qwen3-0.6b llama3-8b)
for shape in "${shapes[@]}"; do
  if [ -f "$work/$shape.thin" ]; then
    :  # left by an earlier run on this warm machine
  elif [ -f "/tmp/ttquick/$shape.thin" ]; then  # left by bench/quick_bench.sh on a warm machine
    ln -sf "/tmp/ttquick/$shape.thin" "$work/$shape.thin"
  else
    python3 bench/hf_random_model.py "$shape" "$work/$shape" "$work/$shape.json" --no-speed >/dev/null 2>&1 || { echo "checkpoint $shape failed"; continue; }
    $TT -q convert "$work/$shape" -o "$work/$shape.thin" && rm -rf "$work/$shape"
  fi
  # One warm-up decode test, then profile the kernels of a few decode steps (the first graph
  # replays after capture); the prefill of the first token is skipped by --launch-skip.
  "$NCU" --clock-control none --graph-profiling node --launch-skip "$skip" --launch-count "$count" \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size \
    --csv --page raw $TT -q bench "$work/$shape.thin" --device cuda --prompt-lengths 0 --gen-tokens 8 --reps 1 \
    --bandwidth 4200 --gemm-tflops 790 ${BENCH_ARGS:-} >"$OUT/ncu-$shape.csv" 2>"$OUT/ncu-$shape.err"
  python3 bench/lib/ncu_summary.py "$OUT/ncu-$shape.csv"
done 2>&1 | tee "$OUT/profile.log"
