#!/usr/bin/env bash
# Stop 52, call 1: the whole GPU check with this binary (main 2006719 + x-first.patch, knob off =
# main's kernels), then the x-first knob at the kernel level: its cases, and QuantGemvSpeed both ways.
cd "$(dirname "$0")/.." || exit 2
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s)
OUT=$OUT/run bash tests/gpu/run.sh > "$OUT/run.txt" 2>&1; echo "run.sh rc=$? [$(( $(date +%s)-t0 )) s]"
grep -E '^(FAIL|==)|passed|failed' "$OUT/run.txt" | tail -25
source tests/gpu/libs.sh
C=.carry
TT_QUANT_X_FIRST=1 timeout 150 $C/bin/gpu_tests --gtest_brief=1 --gtest_filter='*int8*:*int4*:*moe*:*Gemv*:*gemv*:*KernelTable*:-*Speed*:*Bench*' > "$OUT/cases-xf1.log" 2>&1
echo "cases xf1 rc=$? $(grep -E 'PASSED|FAILED' "$OUT/cases-xf1.log" | head -3 | paste -sd' ')"
for r in 1 2; do for v in 0 1; do
  TT_QUANT_X_FIRST=$v timeout 100 $C/bin/gpu_tests --gtest_filter='CudaKernelsBench.QuantGemvSpeed' 2>&1 | grep '\[bench\]' > "$OUT/gemv-xf$v-r$r.log"
  echo "gemv xf=$v r$r: $(awk '$4 != "bf16" {printf "%s/%s %s  ", $3, $4, $9}' "$OUT/gemv-xf$v-r$r.log")"
done; done
cat "$OUT/gemv-xf0-r1.log" | head -20
(cd "$OUT" && tar czf all.tgz --exclude=all.tgz * && find . -type f ! -name all.tgz ! -name run.txt -delete)
echo "done [$(( $(date +%s)-t0 )) s]"
