#!/usr/bin/env bash
# max-max-perf's decode on the 8B shape with its default 8-bit KV cache against --kv-cache float.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
export OUT=${OUT:-$PWD/kv8-out}; mkdir -p "$OUT"
C=.carry
[ -x $C/bin/thintensor ] || xz -dc $C/payload.tar.xz | tar -C $C -xf -
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
t0=$(date +%s)
BENCH_WORK=/dev/shm/kv8s LLAMA=0 STEPS=setup bash bench/depth_bench.sh $C >"$OUT/setup.log" 2>&1
echo "checkpoint and archive: $(( $(date +%s) - t0 )) s"
export THINTENSOR_HOME=/dev/shm/kv8s/home
for r in 1 2; do
  for kv in auto float; do
    j="$OUT/tg-int4-kv$kv-$r.json"
    $C/bin/thintensor bench /dev/shm/kv8s/bf16.thin --device cuda --profile max-max-perf --kv-cache $kv --prompt-lengths 16 --gen-tokens 128 --depths 0,8192,16384 --reps 2 --json >"$j" 2>"$OUT/tg-int4-kv$kv-$r.err"
    echo "max-max-perf --kv-cache $kv (round $r): $(python3 -c "
import json,sys; d=json.load(open(sys.argv[1]))
print(d.get('backend',''), '|', ', '.join(f\"{x['test']} {x['tokens_per_s']:.1f}±{x['sd']:.1f} ({x['bytes_per_token']/1e9:.3f} GB, {100*x['tokens_per_s']/x['roofline_tokens_per_s']:.1f}% of {x['roofline_tokens_per_s']:.0f})\" for x in d['results'] if 'bytes_per_token' in x), '| peak', round(d['peak_vram_bytes']/2**30,2), 'GiB')" "$j" 2>&1 | tail -1) [$(( $(date +%s) - t0 )) s]"
  done
done | tee "$OUT/tg.txt"
rm -rf /dev/shm/kv8s
