#!/usr/bin/env bash
# The quantized decode GEMVs with the weights staged by the copy engine (TT_QUANT_TMA=1, the
# default) against the register loads (TT_QUANT_TMA=0), one call: the kernel cases under both, the
# kernel timings under both, then the 8B decode alternating the two.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 2
export OUT=${OUT:-$PWD/tma-out}; mkdir -p "$OUT"
C=.carry
[ -x $C/bin/thintensor ] || xz -dc $C/payload.tar.xz | tar -C $C -xf -
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
source bench/lib/steps.sh  # elapsed (from t_start)
t_start=$(date +%s)
# E2E_ONLY=1: only the 8B decode (the cases and kernel timings ran in an earlier call).
[ -n "${E2E_ONLY:-}" ] && KCFGS=none
[ -z "${E2E_ONLY:-}" ] && for tma in 1 0; do
  TT_QUANT_TMA=$tma timeout 300 $C/bin/gpu_tests --gtest_brief=1 --gtest_filter='*int8*:*int4*:*moe*:*Gemv*:*gemv*:*KernelTable*:-*Speed*:*Bench*' >"$OUT/cases-tma$tma.log" 2>&1
  rc=$?
  echo "kernel cases TT_QUANT_TMA=$tma: rc=$rc $(grep -E 'PASSED|FAILED' "$OUT/cases-tma$tma.log" | head -3 | paste -sd' ') [$(elapsed) s]"
  [ $rc -ne 0 ] && { grep -B2 -A8 "Failure\|error" "$OUT/cases-tma$tma.log" | head -60; [ "$tma" = 1 ] && [ -z "${GO_ON:-}" ] && exit 1; }
done
# The two paths sum the same products in the same order: TinyStories' CUDA reports must be equal
# to the last digit under both (its INT4 rows of 64 bytes take the staged path).
[ -z "${E2E_ONLY:-}" ] && $C/bin/thintensor -q convert $C/shared/models/tinystories-656k -o /dev/shm/ts.thin --dtype f32
[ -z "${E2E_ONLY:-}" ] && for p in max-performance max-max-perf; do
  for tma in 1 0; do
    TT_QUANT_TMA=$tma timeout 120 $C/bin/thintensor -q validate /dev/shm/ts.thin --reference $C/shared/models/tinystories-656k/reference.safetensors \
      --device cuda --profile $p --json >"$OUT/ts-$p-tma$tma.json" 2>&1
  done
  same=$(python3 -c "import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); k=('min_cosine','mean_kl','max_abs_diff','top1_agreement'); print('identical' if all(a[x]==b[x] for x in k) else 'DIFFER', [a[x] for x in k], [b[x] for x in k])" "$OUT/ts-$p-tma1.json" "$OUT/ts-$p-tma0.json" 2>&1)
  echo "tinystories $p cuda, staged against register path: $same [$(elapsed) s]"
done
# KCFGS: TT_QUANT_TMA:TT_QUANT_TMA_SMEM_KB:TT_QUANT_TMA_BLOCKS per kernel timing run
for cfg in ${KCFGS:-1:110:1 0:110:1}; do
  [ "$cfg" = none ] && continue
  IFS=: read -r tma kb bl <<<"$cfg"
  TT_QUANT_TMA=$tma TT_QUANT_TMA_SMEM_KB=$kb TT_QUANT_TMA_BLOCKS=$bl timeout 200 $C/bin/gpu_tests --gtest_filter='CudaKernelsBench.QuantGemvSpeed' 2>&1 | grep '\[bench\]' >"$OUT/gemv-$tma-$kb-$bl.log"
  echo "gemv $cfg: $(awk '$4 != "bf16" {printf "%s/%s %s  ", $3, $4, $9}' "$OUT/gemv-$tma-$kb-$bl.log") [$(elapsed) s]"
done
[ -n "${NO_E2E:-}" ] && exit 0
BENCH_WORK=/dev/shm/tma LLAMA=0 STEPS=setup bash bench/depth_bench.sh $C >"$OUT/setup.log" 2>&1
echo "checkpoint and archive: [$(elapsed) s]"
export THINTENSOR_HOME=/dev/shm/tma/home
for p in max-max-perf max-performance; do
  for tma in ${ETMA:-1 0 1 0}; do
    [ "$(elapsed)" -gt "${DEADLINE:-560}" ] && { echo "deadline: $p $tma skipped"; continue; }
    j="$OUT/tg-$p-tma$tma-$(date +%s%N).json"
    TT_QUANT_TMA=$tma timeout 120 $C/bin/thintensor bench /dev/shm/tma/bf16.thin --device cuda --profile $p --prompt-lengths 16 --gen-tokens 128 --reps 3 --json >"$j" 2>"$j.err"
    echo "$p TT_QUANT_TMA=$tma: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['test']=='tg128'][0]; print(round(r['tokens_per_s'],1), '±', round(r['sd'],1), 'tok/s,', round(r['bytes_per_token']/1e9,3), 'GB/token, peak', round(d.get('peak_vram_bytes', 0)/2**30, 2), 'GiB')" "$j" 2>&1 | tail -1) [$(elapsed) s]"
  done
done | tee "$OUT/tg.txt"
rm -rf /dev/shm/tma
(cd "$OUT" && tar czf tma.tgz --exclude=tma.tgz . && find . -maxdepth 1 -type f ! -name tma.tgz ! -name tg.txt -delete)
echo "done [$(elapsed) s]"
