#!/usr/bin/env bash
# Stop 58, prepared, not run: the A/B that would take attn-early-kv8 (landed in d8f8837 within a
# checked build, though its own A/B lost 0.5%) back out. From the repository root, after
#   git apply bench/pending/2026-12-08-no-kv8-early/no-kv8-early.patch
#   cmake --build build --target thintensor gpu_tests; tests/gpu/stage.sh build
# with main's thintensor in .carry/old.tar.xz as bin/thintensor: (1) the decode-attention and
# RoPE kernel cases (the 8-bit fused ones then take the fence and the read-back again) and
# tests/gpu/kv_cache_int8.sh; (2) the random Llama-3-8B INT4 (max-max-perf, its 8-bit cache) at
# depths 0 and 4096, old against new alternated twice, and at 16384 once. Land the patch (and
# update decode_attention_mma.cu's header, docs/BENCHMARKS.md, docs/QUANTIZATION.md) only if (1)
# passes and decode gains.
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
mkdir -p .carry/old && xz -dc .carry/old.tar.xz | tar -C .carry/old -xf -
w=/dev/shm/ttd; mkdir -p $w
# CKPT: a bf16 archive of the random Llama-3-8B already on this machine (bench/h200_session.sh's
# setup, kept by KEEP_WORK=1), instead of making one here.
if [ -f "${CKPT:-}" ]; then ln -sf "$CKPT" $w/llama3-8b.thin; echo ok > $w/ready-l
else
( python3 bench/hf_random_model.py llama3-8b $w/l $w/l.json --no-speed > $w/ckpt-l.log 2>&1
  nice .carry/bin/thintensor -q convert $w/l -o $w/llama3-8b.thin --dtype bf16 2>/dev/null && rm -rf $w/l; echo ok > $w/ready-l ) &
fi
timeout 120 .carry/bin/gpu_tests --gtest_filter='*decode_attention*:*rope*' > "$OUT/kt.log" 2>&1
echo "kernel cases rc=$? [$(el) s]"; grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' "$OUT/kt.log" | head -12
OUT=$OUT/kv8 timeout 150 bash tests/gpu/kv_cache_int8.sh > "$OUT/kv8.out" 2>&1; echo "kv_cache_int8.sh rc=$? [$(el) s]"; tail -2 "$OUT/kv8.out"
while [ ! -f $w/ready-l ] && [ "$(el)" -lt 360 ]; do sleep 2; done
tg() {  # tg NAME VERSION DEPTH
  [ "$(el)" -le 520 ] || return 0
  timeout 60 "$PWD/.carry/$([ $2 = new ] || echo old/)bin/thintensor" bench $w/llama3-8b.thin --device cuda --profile max-max-perf \
    --prompt-lengths 16 --depths "$3" --gen-tokens 128 --reps 2 --json > "$OUT/tg-$1-$2.json" 2>/dev/null
  echo "$1 $2: $(python3 bench/tg_summary.py "$OUT/tg-$1-$2.json" 2>&1 | tail -1) [$(el) s]"
}
for r in 1 2; do for d in 0 4096; do for v in old new; do tg int4-d$d-r$r $v $d; done; done; done
for v in old new; do tg int4-d16384 $v 16384; done
(cd "$OUT" && tar czf /tmp/w.tgz . && find . -mindepth 1 -delete && mv /tmp/w.tgz .)
