#!/usr/bin/env bash
# One device call: TT_QUANT_MMA_WARPS=auto (16 warps for rows of >= 8192 columns) against
# the default 8 warps everywhere: kernel cases under auto, kernel timings, 8B decode.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 2
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
C=.carry
[ -x $C/bin/thintensor ] || xz -dc $C/payload.tar.xz | tar -C $C -xf -
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
source bench/lib/steps.sh; t_start=$(date +%s)
# The 8B bf16 archive: quant_bench.sh's when its setup ran on this machine (BF16), else made here.
BF16=${BF16:-/dev/shm/w/bf16.thin}
if [ -f "$BF16" ]; then setup_pid=; else
  BENCH_WORK=/dev/shm/w LLAMA=0 STEPS=setup setsid bash bench/depth_bench.sh $C >"$OUT/setup.log" 2>&1 &
  setup_pid=$!
fi
TT_QUANT_MMA_WARPS=auto timeout 150 $C/bin/gpu_tests --gtest_brief=1 --gtest_filter='*int8*:*int4*:*moe*:*Gemv*:*gemv*:*KernelTable*:-*Speed*:*Bench*' >"$OUT/cases.log" 2>&1
echo "kernel cases (TT_QUANT_MMA_WARPS=auto): rc=$? $(grep -E 'PASSED|FAILED' "$OUT/cases.log" | head -3 | paste -sd' ') [$(elapsed) s]"
[ -n "$setup_pid" ] && { wait $setup_pid; echo "setup rc=$? [$(elapsed) s]"; }
for cfg in "TT_QUANT_MMA_WARPS=auto" "TT_QUANT_MMA_WARPS=8"; do
  env $cfg timeout 100 $C/bin/gpu_tests --gtest_filter='CudaKernelsBench.QuantGemvSpeed' 2>&1 | grep '\[bench\]' >"$OUT/gemv-$cfg.log"
  echo "gemv $cfg: $(awk '$4 != "bf16" {printf "%s/%s %s  ", $3, $4, $9}' "$OUT/gemv-$cfg.log")"
done
export THINTENSOR_HOME=${THINTENSOR_HOME:-/dev/shm/w/home}
for p in ${PROFILES:-max-max-perf max-performance max-max-perf max-performance}; do
  for cfg in "TT_QUANT_MMA_WARPS=auto" "TT_QUANT_MMA_WARPS=8"; do
    [ "$(elapsed)" -gt "${DEADLINE:-240}" ] && { echo "deadline: $p $cfg skipped"; continue; }
    j="$OUT/tg-$p-warps-${cfg#*=}-$(date +%s%N).json"
    env $cfg timeout 100 $C/bin/thintensor bench "$BF16" --device cuda --profile $p --prompt-lengths 16 --gen-tokens 128 --reps 3 --json >"$j" 2>"$j.err"
    echo "$p $cfg: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['test']=='tg128'][0]; print(round(r['tokens_per_s'],1), '±', round(r['sd'],1), 'tok/s,', round(r['bytes_per_token']/1e9,3), 'GB/token, peak', round(d.get('peak_vram_bytes', 0)/2**30, 2), 'GiB, device copy GB/s', round(d.get('device_copy_gbs', 0), 0))" "$j" 2>&1 | tail -1) [$(elapsed) s]"
  done
done
rm -rf /dev/shm/w; rm -f "$OUT"/*.err
(cd "$OUT" && tar czf all.tgz --exclude=all.tgz *.json *.log && rm -f *.json gemv-*.log)
echo "done [$(elapsed) s]"
