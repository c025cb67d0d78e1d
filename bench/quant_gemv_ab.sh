#!/usr/bin/env bash
# A/B of a change to the quantized decode GEMV on the GPU machine, in one call (issue #19):
#   1. the INT8/INT4, MoE and decode-attention kernel cases of this build against the CPU;
#   2. CudaKernelsBench.QuantGemvSpeed (µs per launch on the Llama-3-8B shapes);
#   3. transformers' random Llama-3-8B (bf16), then `bench --prompt-lengths 16 --gen-tokens 128
#      --reps 3` under max-performance and max-max-perf with the binary before the change and this
#      one, alternated (ROUNDS times, default 1).
# Inputs in .carry (after tests/gpu/stage.sh): payload.tar.xz (this build), tt-before.xz (the
# stripped thintensor before the change, xz-compressed), tokenizers/llama3. Output: $OUT/ab.tgz
# (the device call brings back at most 8 files) and a summary on stdout. About 4 minutes on an H200.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
export OUT=${OUT:-$PWD/ab-out}; mkdir -p "$OUT"
C=.carry
source tests/gpu/libs.sh  # unpacks this build's payload
[ -x $C/bin/tt-before ] || { xz -dc $C/tt-before.xz >$C/bin/tt-before && chmod +x $C/bin/tt-before; } || { echo "no $C/tt-before.xz"; exit 2; }
nvidia-smi --query-gpu=name --format=csv,noheader
t0=$(date +%s)
$C/bin/gpu_tests --gtest_brief=1 --gtest_filter='*int8*:*int4*:*moe*:*decode_attention*' >"$OUT/cases.log" 2>&1
echo "kernel cases: $(grep -E 'PASSED|FAILED' "$OUT/cases.log" | head -3 | paste -sd' ')"
$C/bin/gpu_tests --gtest_filter='CudaKernelsBench.QuantGemvSpeed' 2>&1 | grep '\[bench\]' >"$OUT/gemv.log"
awk '{print $3, $4, $9}' "$OUT/gemv.log" | paste -sd' '
BENCH_WORK=/dev/shm/gemv-ab LLAMA=0 STEPS=setup bash bench/depth_bench.sh $C >"$OUT/setup.log" 2>&1
echo "checkpoint and archive: $(( $(date +%s) - t0 )) s"
export THINTENSOR_HOME=/dev/shm/gemv-ab/home
for p in max-performance max-max-perf; do
  for _ in $(seq "${ROUNDS:-1}"); do
    for b in tt-before thintensor; do
      j="$OUT/tg-$p-$b-$_.json"
      $C/bin/$b bench /dev/shm/gemv-ab/bf16.thin --device cuda --profile $p --prompt-lengths 16 --gen-tokens 128 --reps 3 --json >"$j" 2>/dev/null
      echo "$p $b: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['test']=='tg128'][0]; print(round(r['tokens_per_s'],1), '±', round(r['sd'],1), 'tok/s,', round(r['bytes_per_token']/1e9,3), 'GB/token')" "$j")"
    done
  done
done | tee "$OUT/tg.txt"
rm -rf /dev/shm/gemv-ab
(cd "$OUT" && tar czf ab.tgz --exclude=ab.tgz .)
echo "done in $(( $(date +%s) - t0 )) s"
