#!/usr/bin/env bash
# Stop 55, call E (what was left of the session's device time): decode attention's RoPE inputs
# prefetched into L1 against main ae683da. The decode-attention and RoPE kernel cases (new), then
# tg128 of the random Qwen3-0.6B (bf16), old/new alternated three times.
cd "$(dirname "$0")/.." || exit 2
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
mkdir -p .carry/old && xz -dc .carry/old.tar.xz | tar -C .carry/old -xf -
w=/dev/shm/ttd; mkdir -p $w
( python3 bench/hf_random_model.py qwen3-0.6b $w/m $w/m.json --no-speed --no-f32 > $w/ckpt.log 2>&1
  .carry/bin/thintensor -q convert $w/m -o $w/m.thin --dtype bf16 2>/dev/null; echo ok > $w/ready ) &
timeout 90 .carry/bin/gpu_tests --gtest_filter='*decode_attention*:*rope*' > "$OUT/kt.log" 2>&1; echo "kernel cases rc=$? [$(el) s]"
grep -E '^\[  (PASSED|FAILED)' "$OUT/kt.log" | head -8
while [ ! -f $w/ready ] && [ "$(el)" -lt 120 ]; do sleep 1; done
for r in 1 2 3; do for v in old new; do
  [ "$(el)" -gt 150 ] && continue
  b=$PWD/.carry/bin/thintensor; [ $v = old ] && b=$PWD/.carry/old/thintensor
  timeout 20 $b bench $w/m.thin --device cuda --prompt-lengths 0 --gen-tokens 128 --reps 3 --json > "$OUT/tg-$v-r$r.json" 2>/dev/null
  echo "qwen3-0.6b $v r$r: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['test']=='tg128'][0]; print(round(r['tokens_per_s'],1), '±', round(r['sd'],1))" "$OUT/tg-$v-r$r.json" 2>&1 | tail -1) [$(el) s]"
done; done
