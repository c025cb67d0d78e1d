#!/usr/bin/env bash
# Where a prefill's time goes, by kernel, on the GPU machine (the GEMMs, the
# attention, the element-wise kernels), timed by Nsight Compute: what prefill tuning starts from.
# usage: bench/profile_prefill.sh [shape] [tokens]; results in $OUT/prefill-profile-<shape>.txt
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/bench-out}"; mkdir -p "$OUT"
source tests/gpu/libs.sh
TT=$PWD/.carry/bin/thintensor
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "ncu not found"; exit 1; }
shape=${1:-llama3-8b}; tokens=${2:-2048}
work=/tmp/ttprof; mkdir -p "$work"
if [ -f "/tmp/ttquick/$shape.thin" ]; then  # left by bench/quick_bench.sh on a warm machine
  ln -sf "/tmp/ttquick/$shape.thin" "$work/$shape.thin"
elif [ ! -f "$work/$shape.thin" ]; then
  python3 bench/hf_random_model.py "$shape" "$work/$shape" "$work/$shape.json" --no-speed >/dev/null 2>&1 || { echo "checkpoint $shape failed"; exit 1; }
  $TT -q convert "$work/$shape" -o "$work/$shape.thin" && rm -rf "$work/$shape"
fi
# The kernels of the bench's first (warm-up) prefill, timed one by one (no overlap between kernels
# under ncu, so the sum is a little above the real prefill time).
"$NCU" --clock-control none --launch-count "${LAUNCHES:-2000}" --metrics gpu__time_duration.sum --csv --page raw \
  $TT -q bench "$work/$shape.thin" --device cuda --prompt-lengths "$tokens" --gen-tokens 1 --reps 1 \
  --bandwidth 4200 --gemm-tflops 790 >"$work/ncu-prefill.csv" 2>"$OUT/ncu-prefill-$shape.err"
python3 - "$work/ncu-prefill.csv" <<'PY' | tee "$OUT/prefill-profile-$shape.txt"
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1])))
hdr = next((r for r in rows if "Kernel Name" in r), None)
if hdr is None:
    print("no ncu data"); sys.exit(0)
body = rows[rows.index(hdr) + 2:]
ix = {k: hdr.index(k) for k in hdr}
agg = collections.defaultdict(lambda: [0, 0.0])
for r in body:
    if len(r) < len(hdr): continue
    a = agg[r[ix["Kernel Name"]].split("(")[0][:70]]
    a[0] += 1; a[1] += float(r[ix["gpu__time_duration.sum"]].replace(",", ""))
tot = sum(a[1] for a in agg.values())
print(f"total {tot/1e6:.2f} ms over {sum(a[0] for a in agg.values())} kernels")
print(f"{'kernel':<72} {'n':>5} {'total ms':>9} {'share':>6}")
for name, a in sorted(agg.items(), key=lambda kv: -kv[1][1])[:25]:
    print(f"{name:<72} {a[0]:>5} {a[1]/1e6:>9.2f} {100*a[1]/tot:>5.1f}%")
PY
