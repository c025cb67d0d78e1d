#!/usr/bin/env bash
# One device call: the quantized GEMV with 16 warps a block (TT_QUANT_MMA_WARPS=16) and with one
# block an SM (TT_QUANT_MMA_PER_SM=1) against the default: kernel cases, kernel timings, 8B decode.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 2
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
C=.carry
[ -x $C/bin/thintensor ] || xz -dc $C/payload.tar.xz | tar -C $C -xf -
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
source bench/lib/steps.sh; t_start=$(date +%s)
BENCH_WORK=/dev/shm/w LLAMA=0 STEPS=setup setsid bash bench/depth_bench.sh $C >"$OUT/setup.log" 2>&1 &
setup_pid=$!
for cfg in "TT_QUANT_MMA_WARPS=16" "TT_QUANT_MMA_PER_SM=1"; do
  env $cfg timeout 150 $C/bin/gpu_tests --gtest_brief=1 --gtest_filter='*int8*:*int4*:*moe*:*Gemv*:*gemv*:*KernelTable*:-*Speed*:*Bench*' >"$OUT/cases.log" 2>&1
  rc=$?
  echo "kernel cases $cfg: rc=$rc $(grep -E 'PASSED|FAILED' "$OUT/cases.log" | head -3 | paste -sd' ') [$(elapsed) s]"
  [ $rc -ne 0 ] && grep -B2 -A8 "Failure" "$OUT/cases.log" | head -40
done
wait $setup_pid; echo "setup rc=$? [$(elapsed) s]"; tail -3 "$OUT/setup.log"
for r in 1 2; do for cfg in "X=0" "TT_QUANT_MMA_WARPS=16" "TT_QUANT_MMA_PER_SM=1"; do
  env $cfg timeout 100 $C/bin/gpu_tests --gtest_filter='CudaKernelsBench.QuantGemvSpeed' 2>&1 | grep '\[bench\]' >"$OUT/gemv.log"
  echo "gemv $cfg: $(awk '$4 != "bf16" {printf "%s/%s %s  ", $3, $4, $9}' "$OUT/gemv.log")"
done; done
export THINTENSOR_HOME=/dev/shm/w/home
for p in max-max-perf max-performance; do
  for r in 1 2; do for cfg in "X=0" "TT_QUANT_MMA_WARPS=16" "TT_QUANT_MMA_PER_SM=1"; do
    [ "$(elapsed)" -gt "${DEADLINE:-540}" ] && { echo "deadline: $p $cfg skipped"; continue; }
    j="$OUT/tg.json"
    env $cfg timeout 100 $C/bin/thintensor bench /dev/shm/w/bf16.thin --device cuda --profile $p --prompt-lengths 16 --gen-tokens 128 --reps 3 --json >"$j" 2>"$j.err"
    echo "$p $cfg: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['test']=='tg128'][0]; print(round(r['tokens_per_s'],1), '±', round(r['sd'],1), 'tok/s,', round(r['bytes_per_token']/1e9,3), 'GB/token, peak', round(d.get('peak_vram_bytes', 0)/2**30, 2), 'GiB')" "$j" 2>&1 | tail -1) [$(elapsed) s]"
  done; done
done
rm -rf /dev/shm/w
echo "done [$(elapsed) s]"
