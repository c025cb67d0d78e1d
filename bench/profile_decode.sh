#!/usr/bin/env bash
# Per-kernel profile of decode steps with Nsight Compute on the GPU machine (kernel durations, DRAM
# throughput, occupancy, registers): what the next round of decode tuning starts from.
# usage: [NCU_SKIP=N NCU_COUNT=M] bench/profile_decode.sh [shape...]; results in $OUT/ncu-<shape>.csv
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/bench-out}"; mkdir -p "$OUT"
TT=$PWD/.carry/bin/thintensor
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
    --bandwidth 4200 --gemm-tflops 790 >"$OUT/ncu-$shape.csv" 2>"$OUT/ncu-$shape.err"
  python3 - "$OUT/ncu-$shape.csv" <<'PY'
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1])))
hdr = None
for i, r in enumerate(rows):
    if "Kernel Name" in r:
        hdr = r; body = rows[i + 2:]; break
if hdr is None:
    print("no ncu data"); sys.exit(0)
ix = {k: hdr.index(k) for k in hdr}
agg = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0.0])
for r in body:
    if len(r) < len(hdr): continue
    name = r[ix["Kernel Name"]].split("(")[0][:48] + " g" + r[ix["launch__grid_size"]].replace(",", "")
    a = agg[name]; a[0] += 1
    a[1] += float(r[ix["gpu__time_duration.sum"]].replace(",", ""))
    a[2] += float(r[ix["dram__throughput.avg.pct_of_peak_sustained_elapsed"]].replace(",", ""))
    a[3] += float(r[ix["sm__warps_active.avg.pct_of_peak_sustained_active"]].replace(",", ""))
    a[4] = float(r[ix["launch__registers_per_thread"]].replace(",", ""))
tot = sum(a[1] for a in agg.values())
print(f"{'kernel':<60} {'n':>4} {'total us':>10} {'share':>6} {'avg us':>8} {'dram%':>6} {'occ%':>6} {'regs':>5}")
for name, a in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print(f"{name:<60} {a[0]:>4} {a[1]/1e3:>10.1f} {100*a[1]/tot:>5.1f}% {a[1]/a[0]/1e3:>8.2f} {a[2]/a[0]:>6.1f} {a[3]/a[0]:>6.1f} {a[4]:>5.0f}")
PY
done 2>&1 | tee "$OUT/profile.log"
