#!/usr/bin/env bash
# A/B: the GEMVs' first batch of weight loads before pdl_wait (main) or after x is staged
# (TT_QUANT_REG_FIRST=0, TT_GEMV_REG_FIRST=0), end to end on the 8B shape, one call.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
export OUT=${OUT:-$PWD/rf-out}; mkdir -p "$OUT"
C=.carry
[ -x $C/bin/thintensor ] || xz -dc $C/payload.tar.xz | tar -C $C -xf -
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
t0=$(date +%s)
BENCH_WORK=/dev/shm/rf LLAMA=0 STEPS=setup bash bench/depth_bench.sh $C >"$OUT/setup.log" 2>&1
echo "checkpoint and archive: $(( $(date +%s) - t0 )) s"
export THINTENSOR_HOME=/dev/shm/rf/home
for spec in "max-max-perf 2" "max-performance 2" "balanced 1"; do
  set -- $spec; p=$1
  for r in $(seq $2); do
    for f in 1 0; do
      [ $(( $(date +%s) - t0 )) -gt ${DEADLINE:-300} ] && { echo "deadline: $p regfirst $f skipped"; continue; }
      j="$OUT/tg-$p-rf$f-$r.json"
      TT_QUANT_REG_FIRST=$f TT_GEMV_REG_FIRST=$f $C/bin/thintensor bench /dev/shm/rf/bf16.thin --device cuda --profile $p --prompt-lengths 16 --gen-tokens 128 --reps 3 --json >"$j" 2>/dev/null
      echo "$p regfirst $f (round $r): $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['test']=='tg128'][0]; print(round(r['tokens_per_s'],1), '±', round(r['sd'],1), 'tok/s')" "$j" 2>&1 | tail -1) [$(( $(date +%s) - t0 )) s]"
    done
  done
done | tee "$OUT/tg.txt"
rm -rf /dev/shm/rf
