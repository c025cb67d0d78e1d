#!/usr/bin/env bash
# Stop 52, call 3 (main a90a190): issue #19's benchmark narrowed to INT4 and Q4_K_M in one call
# (setup, then the INT4 group-size speed A/B on the same checkpoint, then the measurements).
cd "$(dirname "$0")/.." || exit 2
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
xz -dc .carry/payload.tar.xz | tar -C .carry -xf -
export BENCH_WORK=/dev/shm/q19 TT_QUANTS=int4 LL_TYPES=Q4_K_M
STEPS=setup bash bench/quant_bench.sh .carry > "$OUT/setup.out" 2>&1; echo "setup rc=$? [$(el) s]"
cp "$OUT/q19.log" "$OUT/q19-setup.log" 2>/dev/null
# INT4 groups of 32 (the default), 64 and 128, decode on the same checkpoint, alternated twice.
W=/dev/shm/q19; TT=.carry/bin/thintensor; export THINTENSOR_HOME=$W/home
mkdir -p "$OUT/groups"
if [ "$(el)" -lt 330 ] && [ -f $W/int4.thin ]; then
  for g in 64 128; do
    /usr/bin/time -f "convert G=$g: %e s" $TT -q convert $W/hf -o $W/int4-g$g.thin --dtype bf16 --quant int4 --group-size $g 2>&1 | tail -1
  done
  ls -l $W/int4*.thin | awk '{print $5, $9}'
  for r in 1 2; do for g in 32 64 128; do
    a=$W/int4.thin; [ $g != 32 ] && a=$W/int4-g$g.thin
    j="$OUT/groups/tg-g$g-r$r.json"
    timeout 60 $TT bench "$a" --device cuda --profile max-max-perf --prompt-lengths 16 --gen-tokens 128 --reps 3 --json > "$j" 2>/dev/null
    echo "G=$g r$r: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['test']=='tg128'][0]; print(round(r['tokens_per_s'],1), '±', round(r['sd'],1), 'tok/s,', round(r['bytes_per_token']/1e9,3), 'GB/token, device copy', round(d.get('device_copy_gbs',0)), 'GB/s')" "$j" 2>&1 | tail -1) [$(el) s]"
  done; done
  rm -f $W/int4-g*.thin
else echo "group A/B skipped [$(el) s]"; fi
(cd "$OUT" && tar czf groups.tgz groups && rm -rf groups)
STEPS=bench BENCH_DEADLINE_S=$(( 585 - $(el) )) bash bench/quant_bench.sh .carry > "$OUT/bench.out" 2>&1; echo "bench rc=$? [$(el) s]"
cat "$OUT/q19-summary.md" 2>/dev/null | head -60
tail -5 "$OUT/bench.out"
