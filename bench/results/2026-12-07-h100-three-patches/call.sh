#!/usr/bin/env bash
# Stop 58: the check and A/B of the three pending patches in one call, three binaries:
#   old = main b396110 (.carry/old.tar.xz, bin/thintensor)
#   mid = main + 2026-12-07-attn-early-kv8 + 2026-12-07-int8-x2 (.carry/mid.tar.xz)
#   new = mid + 2026-12-07-rope-consts (the staged build: .carry/payload.tar.xz, with gpu_tests)
# From the repository root, after applying the patches, building, tests/gpu/stage.sh build and
# packing the two older binaries. (1) tests/gpu/run.sh on new: every kernel case (the quantized,
# decode-attention and RoPE ones among them, with 4aac1b1's late-newest-row case) and every
# end-to-end check; (2) tg128 A/Bs, alternated, most telling first, none started after 480 s (AB_CAP_S):
# Qwen3-0.6B bf16 (rope-consts alone: mid against new); the 8B INT4 at depth 0 (attn-early-kv8:
# old against mid; rope-consts: mid against new) and INT8 (int8-x2: old against mid), twice; INT8
# at TT_QUANT_MMA_STEPS=2; the 8B INT4 at depth 4096. Land each patch only if (1) passes and its own
# A/B gains.
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
for v in old mid; do mkdir -p .carry/$v && xz -dc .carry/$v.tar.xz | tar -C .carry/$v -xf -; done
w=/dev/shm/ttd; mkdir -p $w
( python3 bench/hf_random_model.py qwen3-0.6b $w/q $w/q.json --no-speed > $w/ckpt-q.log 2>&1
  nice .carry/bin/thintensor -q convert $w/q -o $w/qwen3-0.6b.thin --dtype bf16 2>/dev/null && rm -rf $w/q; echo ok > $w/ready-q
  python3 bench/hf_random_model.py llama3-8b $w/l $w/l.json --no-speed > $w/ckpt-l.log 2>&1
  nice .carry/bin/thintensor -q convert $w/l -o $w/llama3-8b.thin --dtype bf16 2>/dev/null && rm -rf $w/l; echo ok > $w/ready-l ) &
OUT=$OUT/full timeout 320 bash tests/gpu/run.sh > "$OUT/full.out" 2>&1; echo "run.sh rc=$? [$(el) s]"; tail -2 "$OUT/full.out"
grep -E '^\[  (PASSED|FAILED)|^\[  FAILED|tests from .* ran' "$OUT/full/gpu_tests.log" | head -12
tg() {  # tg NAME VERSION ARCHIVE PROFILE DEPTH [ENV...]
  local n=$1 v=$2 m=$3 p=$4 d=$5; shift 5
  [ "$(el)" -le ${AB_CAP_S:-480} ] || return 0
  env "$@" timeout 45 "$PWD/.carry/$([ $v = new ] || echo "$v/")bin/thintensor" bench $w/$m.thin --device cuda --profile "$p" \
    --prompt-lengths 16 --depths "$d" --gen-tokens 128 --reps 2 --json > "$OUT/tg-$n-$v.json" 2>/dev/null
  echo "$n $v: $(python3 bench/tg_summary.py "$OUT/tg-$n-$v.json" 2>&1 | tail -1) [$(el) s]"
}
while [ ! -f $w/ready-q ] && [ "$(el)" -lt 360 ]; do sleep 1; done
for r in 1 2; do for v in mid new old; do tg 0.6b-r$r $v qwen3-0.6b balanced 0; done; done
while [ ! -f $w/ready-l ] && [ "$(el)" -lt 400 ]; do sleep 2; done
for r in 1 2; do
  for v in old mid new; do tg int4-d0-r$r $v llama3-8b max-max-perf 0; done
  for v in old mid; do tg int8-r$r $v llama3-8b max-performance 0; done
done
tg int8-ms2 mid llama3-8b max-performance 0 TT_QUANT_MMA_STEPS=2
for v in old mid new; do tg int4-d4096 $v llama3-8b max-max-perf 4096; done
(cd "$OUT" && tar czf /tmp/w.tgz . && find . -mindepth 1 -delete && mv /tmp/w.tgz .)
