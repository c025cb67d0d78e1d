#!/usr/bin/env bash
# Stop 53, call C (branch wip-early-warps): TT_QUANT_EARLY_WARPS=N lets only warps < N of a dense
# quantized GEMV block issue their first weight loads before pdl_wait (the others after x is
# staged). Kernel cases against the CPU, kernel times, and 8B decode A/B (16 = main's behaviour).
cd "$(dirname "$0")/.." || exit 2
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
G=.carry/bin/gpu_tests; TT=.carry/bin/thintensor
W=/dev/shm/ew; mkdir -p $W/home; export THINTENSOR_HOME=$W/home
( timeout 200 python3 bench/hf_random_model.py llama3-8b $W/hf $W/hf.json --no-speed --no-f32 > "$OUT/ckpt.log" 2>&1; echo "ckpt rc=$?" > $W/CKPT ) &
for n in 4 0; do
  TT_QUANT_EARLY_WARPS=$n timeout 120 $G --gtest_filter='*int8*:*int4*:*moe*:*Gemv*:*gemv*:*KernelTable*:-CudaKernelsBench*' > "$OUT/cases-$n.log" 2>&1
  echo "cases early=$n rc=$? $(grep -E '^\[  PASSED|^\[  FAILED' "$OUT/cases-$n.log" | tr '\n' ' ') [$(el) s]"
done
for n in 16 4 2 0; do
  TT_QUANT_EARLY_WARPS=$n timeout 90 $G --gtest_filter='CudaKernelsBench.QuantGemvSpeed' > "$OUT/gemv-$n.log" 2>&1
  echo "early=$n: $(grep -E 'int(4|8) ' "$OUT/gemv-$n.log" | awk '{printf "%s/%s %s  ", $3, $4, $(NF-9)}')"
done
echo "[$(el) s]"; while [ ! -f $W/CKPT ]; do sleep 2; done; cat $W/CKPT
$TT -q convert $W/hf -o $W/bf16.thin --dtype bf16 && rm -rf $W/hf; echo "convert [$(el) s]"
for r in 1 2; do for p in max-max-perf max-performance; do for n in 16 4 2; do
  [ "$(el)" -gt 560 ] && { echo "deadline: $p $n r$r skipped"; continue; }
  j="$OUT/tg-$p-$n-r$r.json"
  TT_QUANT_EARLY_WARPS=$n timeout 60 $TT bench $W/bf16.thin --device cuda --profile $p --prompt-lengths 0 --gen-tokens 128 --reps 3 --json > "$j" 2>/dev/null
  echo "$p early=$n r$r: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['test']=='tg128'][0]; print(round(r['tokens_per_s'],1), '±', round(r['sd'],1), 'tok/s,', round(r['bytes_per_token']/1e9,3), 'GB/token, copy', round(d.get('device_copy_gbs',0)), 'GB/s')" "$j" 2>&1 | tail -1) [$(el) s]"
done; done; done
(cd "$OUT" && tar czf callC.tgz --exclude=callC.tgz . )
