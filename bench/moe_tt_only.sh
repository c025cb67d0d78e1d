#!/usr/bin/env bash
# ThinTensor's half of bench/moe_bench.sh alone (no llama.cpp build, no GGUF, no accelerate), for a
# re-measurement in a short device call: the same checkpoint (transformers' init under seed 0),
# converted, then bench resident, --vram-budget 8GiB and 4GiB with random decode inputs, peak VRAM
# from nvidia-smi. usage: bench/moe_tt_only.sh CARRY (as staged by bench/moe_stage.sh); results in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
carry=$1; OUT=${OUT:-$PWD/moe-out}; mkdir -p "$OUT"
TT=$carry/bin/thintensor
source tests/gpu/libs.sh  # the carried libraries the machine lacks
w=/dev/shm/ttmoe-only; rm -rf "$w"; mkdir -p "$w"
python3 bench/hf_random_model.py qwen3-30b-a3b-16l "$w/hf" "$OUT/hf-ckpt.json" --no-speed >"$OUT/ckpt.log" 2>&1 || { tail -5 "$OUT/ckpt.log"; exit 1; }
"$TT" -q convert "$w/hf" -o "$w/m.thin" --dtype bf16 2>"$OUT/convert.err" || { cat "$OUT/convert.err"; exit 1; }
rm -rf "$w/hf"
idle=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
for b in ${MOE_BUDGETS:-resident 8GiB 4GiB}; do
  # note: the driver frees an exited process's memory a moment later; wait for it (up to 15 s) so
  # that the previous run's tail is not this one's peak.
  for _ in $(seq 75); do [ "$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)" -le $((idle + 64)) ] && break; sleep 0.2; done
  flag=(); [ $b = resident ] || flag=(--vram-budget $b)
  if [ $b = resident ]; then args=(--prompt-lengths 512,2048 --gen-tokens 128 --reps 3); else args=(--prompt-lengths 512 --gen-tokens 32 --reps 2); fi
  base=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$w/vram-$b.csv" & smi=$!
  "$TT" bench "$w/m.thin" --device cuda "${flag[@]}" "${args[@]}" --random-decode --json >"$OUT/tt-bench-$b.json" 2>"$OUT/tt-bench-$b.err"
  kill $smi; wait $smi 2>/dev/null
  peak=$(sort -n "$w/vram-$b.csv" | tail -1)
  echo "$b: peak VRAM $((peak - base)) MiB (nvidia-smi, above the $base MiB before)" | tee -a "$OUT/vram.txt"
  python3 -c "
import json,sys; b=json.load(open(sys.argv[1]))
for r in b['results']: print(' ', r['test'], round(r['tokens_per_s'],1), json.dumps(r.get('expert_cache', {})))" "$OUT/tt-bench-$b.json"
done
rm -rf "$w"
