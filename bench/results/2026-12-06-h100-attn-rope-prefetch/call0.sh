#!/usr/bin/env bash
# Stop 56, call 0 (named nvidia-h200, ran on an H100; run from the repository root): the decode-attention and RoPE kernel
# cases with the RoPE prefetch (new); tg128 of the random Qwen3-0.6B (bf16), old (main a1a9ea8)
# against new, alternated three times; then the random Llama-3-8B (bf16) at depth 0, old/new
# alternated twice, and its INT4 (quantized at load, max-max-perf) once each.
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
mkdir -p .carry/old && xz -dc .carry/old.tar.xz | tar -C .carry/old -xf - && ls .carry/old
w=/dev/shm/ttd; mkdir -p $w
( python3 bench/hf_random_model.py qwen3-0.6b $w/q $w/q.json --no-speed > $w/ckpt-q.log 2>&1
  .carry/bin/thintensor -q convert $w/q -o $w/qwen3-0.6b.thin --dtype bf16 2>/dev/null && rm -rf $w/q; echo ok > $w/ready-q
  python3 bench/hf_random_model.py llama3-8b $w/l $w/l.json --no-speed > $w/ckpt-l.log 2>&1
  .carry/bin/thintensor -q convert $w/l -o $w/llama3-8b.thin --dtype bf16 2>/dev/null && rm -rf $w/l; echo ok > $w/ready-l ) &
timeout 120 .carry/bin/gpu_tests --gtest_filter='*decode_attention*:*rope*' > "$OUT/kt.log" 2>&1; echo "kernel cases rc=$? [$(el) s]"
grep -E '^\[  (PASSED|FAILED)|^\[  FAILED' "$OUT/kt.log" | head -12
while [ ! -f $w/ready-q ] && [ "$(el)" -lt 150 ]; do sleep 1; done
tg() {  # tg BINARY ARCHIVE JSON [ARGS...]
  local b=$1 m=$2 j=$3; shift 3
  timeout 60 "$b" bench "$m" --device cuda --prompt-lengths 0 --gen-tokens 128 --reps 3 "$@" --json > "$j" 2>/dev/null
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['test']=='tg128'][0]; print(round(r['tokens_per_s'],1), '±', round(r['sd'],1), 'tok/s,', round(r['bytes_per_token']/1e9,3), 'GB/token, copy', round(d.get('device_copy_gbs',0)), 'GB/s')" "$j" 2>&1 | tail -1
}
bin() { [ $1 = old ] && echo $PWD/.carry/old/thintensor || echo $PWD/.carry/bin/thintensor; }
for r in 1 2 3; do for v in old new; do
  echo "qwen3-0.6b $v r$r: $(tg $(bin $v) $w/qwen3-0.6b.thin "$OUT/tg-0.6b-$v-r$r.json") [$(el) s]"
done; done
while [ ! -f $w/ready-l ] && [ "$(el)" -lt 400 ]; do sleep 2; done
for r in 1 2; do for v in old new; do
  echo "llama3-8b bf16 $v r$r: $(tg $(bin $v) $w/llama3-8b.thin "$OUT/tg-8b-$v-r$r.json") [$(el) s]"
done; done
for v in old new; do
  echo "llama3-8b int4 (max-max-perf) $v: $(tg $(bin $v) $w/llama3-8b.thin "$OUT/tg-8b-int4-$v.json" --profile max-max-perf) [$(el) s]"
done
(cd "$OUT" && tar czf call0.tgz --exclude=call0.tgz . )
