#!/usr/bin/env bash
# One device call: A/B of the dense quantized GEMVs' knobs (each CFGS entry an env assignment,
# default TT_QUANT_MMA_WARPS=auto against TT_QUANT_MMA_WARPS=8, main's default): the kernel cases
# under each non-default setting, the kernel timings of each, and the 8B decode alternating them.
# BF16: the 8B bf16 archive (quant_bench.sh's when its setup ran on this machine), else made here;
# ARCS: a folder with that checkpoint's int4.thin and int8.thin (quant_bench.sh's work folder),
# which the profiles then run as stored instead of quantizing the bf16 archive at each load.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 2
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
C=.carry
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
source bench/lib/steps.sh; t_start=$(date +%s)
CFGS=${CFGS:-TT_QUANT_MMA_WARPS=auto TT_QUANT_MMA_WARPS=8}
BF16=${BF16:-/dev/shm/w/bf16.thin}
if [ -f "$BF16" ]; then setup_pid=; else
  BENCH_WORK=/dev/shm/w LLAMA=0 STEPS=setup setsid bash bench/depth_bench.sh $C >"$OUT/setup.log" 2>&1 &
  setup_pid=$!
fi
tag() { echo "$1" | tr '=' '-'; }
for cfg in $CFGS; do
  case "$cfg" in *=8|*=0) continue;; esac  # main's defaults: their cases ran at landing
  env $cfg timeout 150 $C/bin/gpu_tests --gtest_brief=1 --gtest_filter='*int8*:*int4*:*moe*:*Gemv*:*gemv*:*KernelTable*:-*Speed*:*Bench*' >"$OUT/cases-$(tag $cfg).log" 2>&1
  echo "kernel cases ($cfg): rc=$? $(grep -E 'PASSED|FAILED' "$OUT/cases-$(tag $cfg).log" | head -3 | paste -sd' ') [$(elapsed) s]"
done
[ -n "$setup_pid" ] && { wait $setup_pid; echo "setup rc=$? [$(elapsed) s]"; }
for cfg in $CFGS; do
  env $cfg timeout 100 $C/bin/gpu_tests --gtest_filter='CudaKernelsBench.QuantGemvSpeed' 2>&1 | grep '\[bench\]' >"$OUT/gemv-$(tag $cfg).log"
  echo "gemv $cfg: $(awk '$4 != "bf16" {printf "%s/%s %s  ", $3, $4, $9}' "$OUT/gemv-$(tag $cfg).log")"
done
export THINTENSOR_HOME=${THINTENSOR_HOME:-/dev/shm/w/home}
for p in ${PROFILES:-max-max-perf max-performance max-max-perf max-performance}; do
  for cfg in $CFGS; do
    [ "$(elapsed)" -gt "${DEADLINE:-240}" ] && { echo "deadline: $p $cfg skipped"; continue; }
    j="$OUT/tg-$p-$(tag $cfg)-$(date +%s%N).json"
    arc=$BF16; [ -n "${ARCS:-}" ] && { arc=$ARCS/int8.thin; [ $p = max-max-perf ] && arc=$ARCS/int4.thin; }
    env $cfg timeout 100 $C/bin/thintensor bench "$arc" --device cuda --profile $p --prompt-lengths 16 --gen-tokens 128 --reps 3 --json >"$j" 2>"$j.err"
    echo "$p $cfg: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['test']=='tg128'][0]; print(round(r['tokens_per_s'],1), '±', round(r['sd'],1), 'tok/s,', round(r['bytes_per_token']/1e9,3), 'GB/token, peak', round(d.get('peak_vram_bytes', 0)/2**30, 2), 'GiB, device copy GB/s', round(d.get('device_copy_gbs', 0), 0))" "$j" 2>&1 | tail -1) [$(elapsed) s]"
  done
done
rm -rf /dev/shm/w; rm -f "$OUT"/*.err
(cd "$OUT" && tar czf all.tgz --exclude=all.tgz *.json *.log && rm -f *.json gemv-*.log)
echo "done [$(elapsed) s]"
