#!/usr/bin/env bash
# Short call: the INT4 8B at --vram-budget 4GiB, the doctor's record taken on a quiet host.
cd "$(dirname "$0")/.."
carry=$PWD/.carry; source tests/gpu/libs.sh
TT=$carry/bin/thintensor; w=/dev/shm/q4; mkdir -p $w; export THINTENSOR_HOME=$w/home
t0=$(date +%s); el() { echo "[+$(( $(date +%s) - t0 ))s] $*"; }
echo "busy before:"; ps -eo pcpu,comm --sort=-pcpu | head -5
pkill -f convert_hf_to_gguf; pkill -f build_llama; pkill cc1plus; pkill -f cmake; pkill make; sleep 1
ps -eo pcpu,comm --sort=-pcpu | head -3
if [ ! -s $w/int4.thin ]; then
  python3 bench/hf_random_model.py llama3-8b $w/hf $w/ck.json --ref-len 8 --no-speed --no-f32 >$OUT/ck.log 2>&1; el checkpoint
  $TT -q convert $w/hf -o $w/int4.thin --dtype bf16 --quant int4 2>/dev/null; el convert
fi
rm -rf $w/home; mkdir -p $w/home
$TT doctor --device 0 --cache-test-mib 0 --python-timeout 5 --json >$OUT/doctor.json 2>$OUT/doctor.err; el doctor
for b in 3718MiB 4GiB 3718MiB 4GiB; do
  $TT bench $w/int4.thin --device cuda --profile max-max-perf --vram-budget $b --prompt-lengths 0 --gen-tokens 32 --reps 2 --json >$OUT/bench-$b.json 2>/dev/null
  python3 -c "import json;d=json.load(open('$OUT/bench-$b.json'));r=d['results'][0];print('$b',d['plan']);print('  tok/s',round(r['tokens_per_s'],2),'predicted',round(r['predicted_tokens_per_s'],1))"
done; el benches
