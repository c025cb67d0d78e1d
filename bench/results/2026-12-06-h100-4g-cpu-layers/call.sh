#!/usr/bin/env bash
# Stop 52, call 5 (main 5f26cc3): the INT4 8B at --vram-budget 4GiB with 0..8 layers on the CPU
# against the plan's own choice, each with the plan's prediction: is the planner's CPU count right?
cd "$(dirname "$0")/.." || exit 2
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT/cpu"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
xz -dc .carry/payload.tar.xz | tar -C .carry -xf -
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/cpu/gpu.txt"
W=/dev/shm/g; TT=.carry/bin/thintensor; export THINTENSOR_HOME=$W/home; mkdir -p $W/home
timeout 200 python3 bench/hf_random_model.py llama3-8b $W/hf $W/hf.json --no-speed --no-f32 > "$OUT/cpu/ckpt.log" 2>&1; echo "checkpoint rc=$? [$(el) s]"
xz -dc .carry/tokenizers/llama3/tokenizer.json.xz > $W/hf/tokenizer.json; cp .carry/tokenizers/llama3/tokenizer_config.json $W/hf/
$TT -q convert $W/hf -o $W/int4.thin --dtype bf16 --quant int4 && rm -rf $W/hf; echo "convert [$(el) s]"
$TT doctor --device 0 --cache-test-mib 0 --python-timeout 60 --json > "$OUT/cpu/doctor.json" 2> "$OUT/cpu/doctor.err"; echo "doctor rc=$? [$(el) s]"
run() {  # $1: tag, rest: extra args
  local tag=$1; shift
  [ "$(el)" -gt 250 ] && { echo "deadline: $tag skipped"; return; }
  local j="$OUT/cpu/bench-$tag.json"
  timeout 90 $TT bench $W/int4.thin --device cuda --profile max-max-perf --vram-budget 4GiB --prompt-lengths 0 --gen-tokens 32 --reps 2 --json "$@" > "$j" 2> "$j.err"
  echo "$tag: $(python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); r=d['results'][0]
print(round(r['tokens_per_s'],2), '+-', round(r['sd'],2), 'tok/s, predicted', round(r['predicted_tokens_per_s'],1), '|', d['plan'].split(';')[0], '| cpu', r.get('cpu',{}).get('layers'))" "$j" 2>&1 | tail -1) [$(el) s]"
}
run auto1
for c in 0 2 6 8 3 5; do run c$c --cpu-layers $c; done
run auto2
rm -rf $W
(cd "$OUT" && tar czf cpu.tgz cpu && rm -rf cpu)
