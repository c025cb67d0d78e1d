#!/usr/bin/env bash
# Stop 52, call 4 (main a90a190): INT4 decode speed by group size (32, 64, 128) on transformers'
# random Llama-3-8B, the three archives converted from the same checkpoint, alternated twice.
cd "$(dirname "$0")/.." || exit 2
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT/groups"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
xz -dc .carry/payload.tar.xz | tar -C .carry -xf -
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/groups/gpu.txt"
W=/dev/shm/g; TT=.carry/bin/thintensor; export THINTENSOR_HOME=$W/home; mkdir -p $W/home
timeout 200 python3 bench/hf_random_model.py llama3-8b $W/hf $W/hf.json --no-speed --no-f32 > "$OUT/groups/ckpt.log" 2>&1; echo "checkpoint rc=$? [$(el) s]"
xz -dc .carry/tokenizers/llama3/tokenizer.json.xz > $W/hf/tokenizer.json; cp .carry/tokenizers/llama3/tokenizer_config.json $W/hf/
for g in 32 64 128; do
  /usr/bin/time -f "convert --quant int4 --group-size $g: %e s, max RSS %M KiB" $TT -q convert $W/hf -o $W/int4-g$g.thin --dtype bf16 --quant int4 --group-size $g 2>&1 | tail -1
done
ls -l $W/*.thin | awk '{print $5, $9}' | tee "$OUT/groups/sizes.txt"
for r in 1 2; do for g in 32 64 128; do
  [ "$(el)" -gt 330 ] && { echo "deadline: G=$g r$r skipped"; continue; }
  j="$OUT/groups/tg-g$g-r$r.json"
  timeout 60 $TT bench $W/int4-g$g.thin --device cuda --profile max-max-perf --prompt-lengths 16 --gen-tokens 128 --reps 3 --json > "$j" 2>"$j.err"
  echo "G=$g r$r: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['test']=='tg128'][0]; print(round(r['tokens_per_s'],1), '±', round(r['sd'],1), 'tok/s,', round(r['bytes_per_token']/1e9,3), 'GB/token, device copy', round(d.get('device_copy_gbs',0)), 'GB/s')" "$j" 2>&1 | tail -1) [$(el) s]"
done; done
rm -rf $W
(cd "$OUT" && tar czf groups.tgz groups && rm -rf groups)
