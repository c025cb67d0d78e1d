#!/usr/bin/env bash
# Stop 57, prepared, not run: the check and A/B of the two pending patches,
# 2026-12-07-attn-early-kv8 and 2026-12-07-int8-x2, either one or both (they touch different files
# and apply together). From the repository root, after
#   git apply bench/pending/2026-12-07-attn-early-kv8/attn-early-kv8.patch bench/pending/2026-12-07-int8-x2/int8-x2.patch
#   (or either alone), cmake --build build --target thintensor gpu_tests; tests/gpu/stage.sh build
# with main's thintensor in .carry/old.tar.xz as bin/thintensor:
# (1) the quantized and decode-attention kernel cases (among them the late-newest-row case 4aac1b1
# added); (2) tests/gpu/run.sh (quant.sh's greedy texts, kv_cache_int8.sh); (3) the random
# Llama-3-8B, old against new alternated twice: INT8 (max-performance: int8-x2's effect; also at
# TT_QUANT_MMA_STEPS=2, as MS = 3 was chosen for the old kernel) and INT4 (max-max-perf, whose
# 8-bit cache takes attn-early-kv8) at depths 0 and 4096. Land each patch only if (1) and (2) pass
# and its own A/B gains.
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
mkdir -p .carry/old && xz -dc .carry/old.tar.xz | tar -C .carry/old -xf -
w=/dev/shm/ttd; mkdir -p $w
( python3 bench/hf_random_model.py llama3-8b $w/l $w/l.json --no-speed > $w/ckpt-l.log 2>&1
  nice .carry/bin/thintensor -q convert $w/l -o $w/llama3-8b.thin --dtype bf16 2>/dev/null && rm -rf $w/l; echo ok > $w/ready-l ) &
timeout 180 .carry/bin/gpu_tests --gtest_filter='*gemv_int*:*gemv_gated_int*:*dequantize*:*moe_ffn*:*decode_attention*:*rope*' > "$OUT/kt.log" 2>&1
echo "kernel cases rc=$? [$(el) s]"; grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' "$OUT/kt.log" | head -12
OUT=$OUT/full timeout 300 bash tests/gpu/run.sh > "$OUT/full.out" 2>&1; echo "run.sh rc=$? [$(el) s]"; tail -2 "$OUT/full.out"
while [ ! -f $w/ready-l ] && [ "$(el)" -lt 420 ]; do sleep 2; done
tg() {  # tg NAME BINARY PROFILE DEPTH [ENV...]
  local n=$1 b=$2 p=$3 d=$4; shift 4
  env "$@" timeout 60 "$b" bench $w/llama3-8b.thin --device cuda --profile "$p" --prompt-lengths 16 --depths "$d" --gen-tokens 128 --reps 2 --json > "$OUT/tg-$n.json" 2>/dev/null
  echo "$n: $(python3 bench/tg_summary.py "$OUT/tg-$n.json" 2>&1 | tail -1) [$(el) s]"
}
old=$PWD/.carry/old/bin/thintensor; new=$PWD/.carry/bin/thintensor
for r in 1 2; do
  [ "$(el)" -le 500 ] || break
  tg int8-old-r$r $old max-performance 0; tg int8-new-r$r $new max-performance 0; tg int8-new-ms2-r$r $new max-performance 0 TT_QUANT_MMA_STEPS=2
  for d in 0 4096; do tg int4-d$d-old-r$r $old max-max-perf $d; tg int4-d$d-new-r$r $new max-max-perf $d; done
done
(cd "$OUT" && tar czf /tmp/w.tgz . && find . -mindepth 1 -delete && mv /tmp/w.tgz .)
