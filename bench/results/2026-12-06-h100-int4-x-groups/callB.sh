#!/usr/bin/env bash
# Stop 55, call B (the same machine, warm): waits for call A's setup; the 8B decode step under ncu
# (INT4, on the setup's bf16 archive, after the A/B); tg128 of the INT4 and INT8 archives, old (main
# ae683da) against new, alternated twice; then quant_bench's measurements (INT8, INT4, Q8_0,
# Q4_K_M, 4 GiB) with whichever binary decoded INT4 faster.
cd "$(dirname "$0")/.." || exit 2
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
while [ ! -f /dev/shm/q19out/SETUP_DONE ] && [ "$(el)" -lt 200 ]; do sleep 5; done
echo "[$(el) s] $(cat /dev/shm/q19out/SETUP_DONE 2>/dev/null || echo 'setup still running')"
cp /dev/shm/q19out/q19.log "$OUT/setup.log" 2>/dev/null; cp /dev/shm/q19out/setup.out "$OUT/" 2>/dev/null
export THINTENSOR_HOME=/dev/shm/q19/home
tg() {  # tg BINARY ARCHIVE JSON
  timeout 60 "$1" bench "$2" --device cuda --prompt-lengths 0 --gen-tokens 128 --reps 3 --json > "$3" 2>/dev/null
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['test']=='tg128'][0]; print(round(r['tokens_per_s'],1), '±', round(r['sd'],1), 'tok/s,', round(r['bytes_per_token']/1e9,3), 'GB/token, copy', round(d.get('device_copy_gbs',0)), 'GB/s')" "$3" 2>&1 | tail -1
}
mkdir -p "$OUT/ab"
for r in 1 2; do for q in int4 int8; do for v in old new x2; do
  [ $q = int8 ] && [ $v = x2 ] && continue
  b=$PWD/.carry/bin/thintensor; [ $v = old ] && b=$PWD/.carry/old/thintensor; [ $v = x2 ] && b=$PWD/.carry/x2/thintensor
  echo "$q $v r$r: $(tg $b /dev/shm/q19/$q.thin "$OUT/ab/tg-$q-$v-r$r.json") [$(el) s]"
done; done; done
best=$(python3 - "$OUT/ab" <<'PY'
import json,sys,glob
def m(v): return sum(json.load(open(f))['results'][-1]['tokens_per_s'] for f in glob.glob(f"{sys.argv[1]}/tg-int4-{v}-r*.json"))
try: print('new' if m('new') >= m('old') else 'old')
except Exception: print('old')
PY
)
echo "INT4 faster: $best"
mkdir -p /tmp/ttprof "$OUT/prof-bf16" "$OUT/prof-int4" "$OUT/prof-int8"
ln -sf /dev/shm/q19/bf16.thin /tmp/ttprof/llama3-8b.thin
BENCH_ARGS="--profile max-max-perf" OUT=$OUT/prof-int4 timeout 120 bash bench/profile_decode.sh llama3-8b > "$OUT/prof-int4/run.out" 2>&1; echo "profile 8B INT4 rc=$? [$(el) s]"
head -14 "$OUT/prof-int4/profile.log"
if [ $best = old ]; then cp .carry/old/thintensor .carry/bin/thintensor; fi
OUT=$OUT/q19 STEPS=bench BENCH_WORK=/dev/shm/q19 BENCH_DEADLINE_S=$(( 585 - $(el) )) bash bench/quant_bench.sh .carry > "$OUT/bench.out" 2>&1; echo "bench rc=$? [$(el) s]"
cat "$OUT/q19/q19-summary.md" 2>/dev/null | head -70
tail -5 "$OUT/bench.out"
(cd "$OUT" && tar czf callB.tgz --exclude=callB.tgz . )
