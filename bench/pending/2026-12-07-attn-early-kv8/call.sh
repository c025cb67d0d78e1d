#!/usr/bin/env bash
# Stop 57, prepared, not run (from the repository root after tests/gpu/stage.sh of main with
# attn-early-kv8.patch applied, and main's thintensor in .carry/old.tar.xz as bin/thintensor):
# (1) the decode-attention and RoPE kernel cases, among them the 8-bit cache's fused cases and
# the late-newest-row case 4aac1b1 added; (2) tests/gpu/run.sh (kv_cache_int8.sh and quant.sh
# run the 8-bit cache end to end); (3) if time is left, tg128 of the random Llama-3-8B INT4
# (quantized at load, max-max-perf: the 8-bit cache) at depths 0 and 4096, old against new,
# alternated twice.
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
mkdir -p .carry/old && xz -dc .carry/old.tar.xz | tar -C .carry/old -xf -
w=/dev/shm/ttd; mkdir -p $w
( python3 bench/hf_random_model.py llama3-8b $w/l $w/l.json --no-speed > $w/ckpt-l.log 2>&1
  nice .carry/bin/thintensor -q convert $w/l -o $w/llama3-8b.thin --dtype bf16 2>/dev/null && rm -rf $w/l; echo ok > $w/ready-l ) &
timeout 120 .carry/bin/gpu_tests --gtest_filter='*decode_attention*:*rope*' > "$OUT/kt.log" 2>&1; echo "kernel cases rc=$? [$(el) s]"
grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' "$OUT/kt.log" | head -12
OUT=$OUT/full timeout 300 bash tests/gpu/run.sh > "$OUT/full.out" 2>&1; echo "run.sh rc=$? [$(el) s]"; tail -2 "$OUT/full.out"
while [ ! -f $w/ready-l ] && [ "$(el)" -lt 420 ]; do sleep 2; done
bin() { [ $1 = old ] && echo $PWD/.carry/old/bin/thintensor || echo $PWD/.carry/bin/thintensor; }
for d in 0 4096; do for r in 1 2; do for v in old new; do
  [ "$(el)" -le 540 ] || continue
  j="$OUT/tg-int4-d$d-$v-r$r.json"
  timeout 60 $(bin $v) bench $w/llama3-8b.thin --device cuda --profile max-max-perf --prompt-lengths 16 --depths $d --gen-tokens 128 --reps 2 --json > "$j" 2>/dev/null
  echo "8B INT4 (8-bit cache) depth $d $v r$r: $(python3 bench/tg_summary.py "$j" 2>&1 | tail -1) [$(el) s]"
done; done; done
(cd "$OUT" && tar czf /tmp/w.tgz . && find . -mindepth 1 -delete && mv /tmp/w.tgz .)
