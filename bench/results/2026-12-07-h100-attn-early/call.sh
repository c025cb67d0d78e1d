#!/usr/bin/env bash
# Stop 57 (run from the repository root after tests/gpu/stage.sh of the patch, with main c357fe3's
# thintensor and gpu_tests in .carry/old.tar.xz as bin/): decode attention's first stages issued
# before pdl_wait and the newest row put into its tile from shared memory. (1) the decode-attention
# and RoPE kernel cases; (2) tg128 of the random Qwen3-0.6B (bf16), old against new, alternated
# three times; (3) the random Llama-3-8B (bf16) at depths 0 and 4096, alternated twice; (4) if
# time is left, tests/gpu/run.sh on the patch.
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
mkdir -p .carry/old && xz -dc .carry/old.tar.xz | tar -C .carry/old -xf -
w=/dev/shm/ttd; mkdir -p $w
( python3 bench/hf_random_model.py qwen3-0.6b $w/q $w/q.json --no-speed > $w/ckpt-q.log 2>&1
  .carry/bin/thintensor -q convert $w/q -o $w/qwen3-0.6b.thin --dtype bf16 2>/dev/null && rm -rf $w/q; echo ok > $w/ready-q
  python3 bench/hf_random_model.py llama3-8b $w/l $w/l.json --no-speed > $w/ckpt-l.log 2>&1
  .carry/bin/thintensor -q convert $w/l -o $w/llama3-8b.thin --dtype bf16 2>/dev/null && rm -rf $w/l; echo ok > $w/ready-l ) &
timeout 120 .carry/bin/gpu_tests --gtest_filter='*decode_attention*:*rope*' > "$OUT/kt.log" 2>&1; echo "kernel cases rc=$? [$(el) s]"
grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' "$OUT/kt.log" | head -12
while [ ! -f $w/ready-q ] && [ "$(el)" -lt 150 ]; do sleep 1; done
tg() {  # tg BINARY ARCHIVE JSON DEPTH
  timeout 90 "$1" bench "$2" --device cuda --prompt-lengths "$4" --gen-tokens 128 --reps 3 --json > "$3" 2>/dev/null
  python3 bench/tg_summary.py "$3" 2>&1 | tail -1
}
bin() { [ $1 = old ] && echo $PWD/.carry/old/bin/thintensor || echo $PWD/.carry/bin/thintensor; }
for r in 1 2 3; do for v in old new; do
  echo "qwen3-0.6b $v r$r: $(tg $(bin $v) $w/qwen3-0.6b.thin "$OUT/tg-0.6b-$v-r$r.json" 0) [$(el) s]"
done; done
while [ ! -f $w/ready-l ] && [ "$(el)" -lt 300 ]; do sleep 2; done
for d in 0 4096; do for r in 1 2; do for v in old new; do
  echo "llama3-8b bf16 depth $d $v r$r: $(tg $(bin $v) $w/llama3-8b.thin "$OUT/tg-8b-d$d-$v-r$r.json" $d) [$(el) s]"
done; done; done
if [ "$(el)" -lt 300 ]; then
  OUT=$OUT/full timeout $(( 560 - $(el) )) bash tests/gpu/run.sh > "$OUT/full.out" 2>&1; echo "run.sh rc=$? [$(el) s]"; tail -3 "$OUT/full.out"
fi
(cd "$OUT" && tar czf /tmp/w.tgz . && find . -mindepth 1 -delete && mv /tmp/w.tgz .)
