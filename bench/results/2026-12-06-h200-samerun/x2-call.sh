#!/usr/bin/env bash
# Stop 56, prepared; stop 57 ran it (from the repository root after tests/gpu/stage.sh of main, with
# the patch's thintensor and gpu_tests in .carry/x2.tar.xz as bin/): INT4's x in two digits per
# group of 32 columns (x-groups-two-digits.patch of ../2026-12-06-h100-int4-x-groups) with the
# INT4 kernel cases' bound at 5e-4: (1) the quantized kernel cases; (2) tests/gpu/quant.sh, the
# quantized profiles on CUDA against the CPU (reports and greedy text) on TinyStories-656K and
# every fixture; (3) if time is left, tg128 of the random Llama-3-8B INT4 (quantized at load,
# max-max-perf), old (main) against new, alternated twice.
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
C=.carry; S=$C/shared
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
# new: the patch's thintensor and gpu_tests from $C/x2.tar.xz; old: main's, the payload's.
mkdir -p $C/x2 && xz -dc $C/x2.tar.xz | tar -C $C/x2 -xf -
NEW=$PWD/$C/x2/bin; OLD=$PWD/$C/bin; TT=$NEW/thintensor
w8=/dev/shm/x2; mkdir -p $w8
ab=${X2_AB:-1}  # X2_AB=0: no 8B A/B (the device time is short; stop 55 measured it)
[ "$ab" = 1 ] && ( python3 bench/hf_random_model.py llama3-8b $w8/l $w8/l.json --no-speed > $w8/ckpt.log 2>&1
  nice $TT -q convert $w8/l -o $w8/llama3-8b.thin --dtype bf16 2>/dev/null && rm -rf $w8/l; echo ok > $w8/ready ) &
timeout 150 $NEW/gpu_tests --gtest_filter='*gemv_int*:*gemv_gated_int*:*dequantize*:*moe_ffn*' > "$OUT/kt.log" 2>&1; echo "kernel cases rc=$? [$(el) s]"
grep -E '^\[  (PASSED|FAILED)' "$OUT/kt.log" | head -12
work=$(mktemp -d)
pass=0; failed=0
check() { local name=$1; shift; if "$@" >"$work/log" 2>&1; then pass=$((pass+1)); echo "ok   $name"; else failed=$((failed+1)); echo "FAIL $name"; cat "$work/log"; fi; cat "$work/log" >>"$OUT/checks.log"; }
source tests/gpu/fixtures.sh
for m in $GPU_FIXTURES; do $TT -q convert "$S/fixtures/hf-tiny/$m" -o "$work/$m.f32.thin" --dtype f32; done
$TT -q convert "$S/models/tinystories-656k" -o "$work/ts.thin" --dtype f32
echo "== quant.sh [$(el) s]"
# QUANT_PROFILES (default both) narrows quant.sh's loop, e.g. to max-max-perf (INT4) when time is short.
sed "s/^for p in max-performance max-max-perf; do/for p in ${QUANT_PROFILES:-max-performance max-max-perf}; do/" tests/gpu/quant.sh > "$work/quant.sh"
source "$work/quant.sh"
echo "quant.sh: $pass passed, $failed failed [$(el) s]"
tg() {  # tg BINARY JSON
  timeout 60 "$1" bench $w8/llama3-8b.thin --device cuda --prompt-lengths 0 --gen-tokens 128 --reps 3 --profile max-max-perf --json > "$2" 2>/dev/null
  python3 bench/tg_summary.py "$2" 2>&1 | tail -1
}
while [ "$ab" = 1 ] && [ ! -f $w8/ready ] && [ "$(el)" -lt 380 ]; do sleep 2; done
for r in 1 2; do for v in old new; do
  { [ "$ab" = 1 ] && [ "$(el)" -le 430 ]; } || continue
  b=$NEW/thintensor; [ $v = old ] && b=$OLD/thintensor
  echo "8B INT4 $v r$r: $(tg $b "$OUT/tg-int4-$v-r$r.json") [$(el) s]"
done; done
(cd "$OUT" && tar czf /tmp/x2.tgz . && mv /tmp/x2.tgz "$OUT/")
