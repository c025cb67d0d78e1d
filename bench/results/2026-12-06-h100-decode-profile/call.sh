#!/usr/bin/env bash
# Stop 53, call D: issue #21's decode step before and after, on one machine. "before" is
# 1d65a0d (main when #21's first change landed, 2026-12-03), "after" is main. Both profiled with
# bench/profile_decode.sh (ncu, kernels timed alone) and timed with `thintensor bench` tg128 on the
# same archives (converted by the old binary, which both read), alternated twice.
cd "$(dirname "$0")/.." || exit 2
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
OLD=.carry/old/thintensor; mkdir -p .carry/old; xz -dc .carry/old.xz > $OLD && chmod +x $OLD
$OLD --version 2>&1 | head -1; .carry/bin/thintensor --version 2>&1 | head -1
mkdir -p /tmp/ttprof
for shape in qwen3-0.6b llama3-8b; do
  timeout 200 python3 bench/hf_random_model.py $shape /tmp/ttprof/$shape /tmp/ttprof/$shape.json --no-speed --no-f32 > "$OUT/ckpt-$shape.log" 2>&1
  $OLD -q convert /tmp/ttprof/$shape -o /tmp/ttprof/$shape.thin --dtype bf16 2>/dev/null && rm -rf /tmp/ttprof/$shape; echo "$shape ready [$(el) s]"
done
for v in before after; do
  tt=.carry/bin/thintensor; [ $v = before ] && tt=$PWD/$OLD
  mkdir -p "$OUT/$v"; TT=$tt OUT=$OUT/$v timeout 200 bash bench/profile_decode.sh qwen3-0.6b llama3-8b > "$OUT/$v/run.out" 2>&1
  echo "profile $v rc=$? [$(el) s]"; grep -v warning "$OUT/$v/profile.log"
done
for r in 1 2; do for shape in qwen3-0.6b llama3-8b; do for v in before after; do
  [ "$(el)" -gt 300 ] && continue
  tt=.carry/bin/thintensor; [ $v = before ] && tt=$OLD
  j="$OUT/tg-$shape-$v-r$r.json"
  timeout 60 $tt bench /tmp/ttprof/$shape.thin --device cuda --prompt-lengths 0 --gen-tokens 128 --reps 3 --json > "$j" 2>/dev/null
  echo "$shape $v r$r: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['test']=='tg128'][0]; print(round(r['tokens_per_s'],1), '±', round(r['sd'],1), 'tok/s,', round(r['bytes_per_token']/1e9,3), 'GB/token, copy', round(d.get('device_copy_gbs',0)), 'GB/s')" "$j" 2>&1 | tail -1) [$(el) s]"
done; done; done
(cd "$OUT" && tar czf callD.tgz --exclude=callD.tgz . )
