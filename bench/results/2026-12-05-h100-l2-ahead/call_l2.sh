#!/usr/bin/env bash
# A/B of the GEMVs' L2 prefetch (TT_*_L2_AHEAD) and late first loads (TT_*_REG_FIRST=0), one call.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
export OUT=${OUT:-$PWD/l2-out}; mkdir -p "$OUT"
C=.carry
[ -x $C/bin/thintensor ] || xz -dc $C/payload.tar.xz | tar -C $C -xf -
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
TT_QUANT_L2_AHEAD=2 TT_QUANT_REG_FIRST=0 TT_GEMV_L2_AHEAD=2 TT_GEMV_REG_FIRST=0 \
  $C/bin/gpu_tests --gtest_brief=1 --gtest_filter='*int8*:*int4*:*moe*:*Gemv*:*gemv*:*decode*:-*Speed*:*Bench*' >"$OUT/cases.log" 2>&1
echo "kernel cases (prefetch 2, late loads): rc=$? $(grep -E 'PASSED|FAILED' "$OUT/cases.log" | head -3 | paste -sd' ') [$(el) s]"
for cfg in ${KCFGS:-"0 1" "1 1" "2 1" "0 0" "1 0" "2 0"}; do
  set -- $cfg
  TT_QUANT_L2_AHEAD=$1 TT_QUANT_REG_FIRST=$2 TT_GEMV_L2_AHEAD=$1 TT_GEMV_REG_FIRST=$2 \
    $C/bin/gpu_tests --gtest_filter='CudaKernelsBench.QuantGemvSpeed' 2>&1 | grep '\[bench\]' >"$OUT/gemv-a$1-r$2.log"
  echo "ahead $1 regfirst $2: $(awk '{printf "%s/%s %s  ", $3, $4, $9}' "$OUT/gemv-a$1-r$2.log") [$(el) s]"
done
BENCH_WORK=/dev/shm/l2ab LLAMA=0 STEPS=setup bash bench/depth_bench.sh $C >"$OUT/setup.log" 2>&1
echo "checkpoint and archive: [$(el) s]"
export THINTENSOR_HOME=/dev/shm/l2ab/home
for p in max-max-perf max-performance balanced; do
  for cfg in ${ECFGS:-"0 1" "2 1" "2 0" "0 1" "2 1" "2 0"}; do
    [ "$(el)" -gt "${DEADLINE:-540}" ] && { echo "deadline: $p $cfg skipped"; continue; }
    set -- $cfg
    j="$OUT/tg-$p-a$1-r$2-$(date +%s%N).json"
    TT_QUANT_L2_AHEAD=$1 TT_QUANT_REG_FIRST=$2 TT_GEMV_L2_AHEAD=$1 TT_GEMV_REG_FIRST=$2 \
      $C/bin/thintensor bench /dev/shm/l2ab/bf16.thin --device cuda --profile $p --prompt-lengths 16 --gen-tokens 128 --reps 3 --json >"$j" 2>/dev/null
    echo "$p ahead $1 regfirst $2: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['test']=='tg128'][0]; print(round(r['tokens_per_s'],1), '±', round(r['sd'],1), 'tok/s,', round(r['bytes_per_token']/1e9,3), 'GB/token')" "$j" 2>&1 | tail -1) [$(el) s]"
  done
done | tee "$OUT/tg.txt"
rm -rf /dev/shm/l2ab
(cd "$OUT" && tar czf l2.tgz --exclude=l2.tgz . && find . -maxdepth 1 -type f ! -name l2.tgz ! -name tg.txt -delete)
echo "done [$(el) s]"
