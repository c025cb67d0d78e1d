#!/usr/bin/env bash
# Stop 57, prepared, not run (from the repository root after tests/gpu/stage.sh of main with
# int8-x2.patch applied, and main's thintensor in .carry/old.tar.xz as bin/thintensor; .carry/shared
# as stage.sh leaves it): INT8's x in two digits per group of 32 columns. (1) the quantized kernel
# cases; (2) tests/gpu/quant.sh, both profiles, CUDA's reports and 120-token greedy texts against
# the CPU's; (3) tg128 of the random Llama-3-8B INT8 (quantized at load, max-performance), old
# against new, alternated twice, and new with TT_QUANT_MMA_STEPS=2 (MS was tuned on the old
# kernel: 3 for INT8).
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
C=.carry; S=$C/shared; TT=$PWD/$C/bin/thintensor
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
mkdir -p $C/old && xz -dc $C/old.tar.xz | tar -C $C/old -xf -
w8=/dev/shm/x2; mkdir -p $w8
( python3 bench/hf_random_model.py llama3-8b $w8/l $w8/l.json --no-speed > $w8/ckpt.log 2>&1
  nice $TT -q convert $w8/l -o $w8/llama3-8b.thin --dtype bf16 2>/dev/null && rm -rf $w8/l; echo ok > $w8/ready ) &
timeout 150 $C/bin/gpu_tests --gtest_filter='*gemv_int*:*gemv_gated_int*:*dequantize*:*moe_ffn*' > "$OUT/kt.log" 2>&1; echo "kernel cases rc=$? [$(el) s]"
grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' "$OUT/kt.log" | head -12
work=$(mktemp -d); pass=0; failed=0
check() { local name=$1; shift; if "$@" >"$work/log" 2>&1; then pass=$((pass+1)); echo "ok   $name"; else failed=$((failed+1)); echo "FAIL $name"; cat "$work/log"; fi; cat "$work/log" >>"$OUT/checks.log"; }
source tests/gpu/fixtures.sh
for m in $GPU_FIXTURES; do $TT -q convert "$S/fixtures/hf-tiny/$m" -o "$work/$m.f32.thin" --dtype f32; done
$TT -q convert "$S/models/tinystories-656k" -o "$work/ts.thin" --dtype f32
echo "== quant.sh [$(el) s]"
source tests/gpu/quant.sh
echo "quant.sh: $pass passed, $failed failed [$(el) s]"
while [ ! -f $w8/ready ] && [ "$(el)" -lt 380 ]; do sleep 2; done
tg() {  # tg BINARY JSON [ENV...]
  local b=$1 j=$2; shift 2
  env "$@" timeout 60 "$b" bench $w8/llama3-8b.thin --device cuda --prompt-lengths 0 --gen-tokens 128 --reps 3 --profile max-performance --json > "$j" 2>/dev/null
  python3 bench/tg_summary.py "$j" 2>&1 | tail -1
}
for r in 1 2; do for v in old new new-ms2; do
  [ "$(el)" -le 520 ] || continue
  b=$TT; e=(); [ $v = old ] && b=$PWD/$C/old/bin/thintensor; [ $v = new-ms2 ] && e=(TT_QUANT_MMA_STEPS=2)
  echo "8B INT8 $v r$r: $(tg $b "$OUT/tg-int8-$v-r$r.json" "${e[@]}") [$(el) s]"
done; done
(cd "$OUT" && tar czf /tmp/w.tgz . && find . -mindepth 1 -delete && mv /tmp/w.tgz .)
