#!/usr/bin/env bash
# Stop 55, call C: the tg128 A/B that call B lost (its old/x2 binaries were not unpacked): the
# random Llama-3-8B again (LLAMA=0 setup: bf16, INT8, INT4), then INT4 old/new/x2 and INT8
# old/new, alternated twice.
cd "$(dirname "$0")/.." || exit 2
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
mkdir -p .carry/old .carry/x2 && xz -dc .carry/old.tar.xz | tar -C .carry/old -xf - && xz -dc .carry/x2.tar.xz | tar -C .carry/x2 -xf - && ls .carry/old .carry/x2
if [ ! -f /dev/shm/q19/int4.thin ]; then
  OUT=$OUT/setup STEPS=setup LLAMA=0 TT_QUANTS="int8 int4" BENCH_WORK=/dev/shm/q19 BENCH_DEADLINE_S=330 bash bench/quant_bench.sh .carry > "$OUT/setup.out" 2>&1; echo "setup rc=$? [$(el) s]"
fi
export THINTENSOR_HOME=/dev/shm/q19/home
tg() {
  timeout 40 "$1" bench "$2" --device cuda --prompt-lengths 0 --gen-tokens 128 --reps 3 --json > "$3" 2>"$3.err"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['test']=='tg128'][0]; print(round(r['tokens_per_s'],1), '±', round(r['sd'],1), 'tok/s,', round(r['bytes_per_token']/1e9,3), 'GB/token, copy', round(d.get('device_copy_gbs',0)), 'GB/s')" "$3" 2>&1 | tail -1
}
for r in 1 2; do for q in int4 int8; do for v in old new x2; do
  [ $q = int8 ] && [ $v = x2 ] && continue
  [ "$(el)" -gt 560 ] && continue
  b=$PWD/.carry/bin/thintensor; [ $v = old ] && b=$PWD/.carry/old/thintensor; [ $v = x2 ] && b=$PWD/.carry/x2/thintensor
  echo "$q $v r$r: $(tg $b /dev/shm/q19/$q.thin "$OUT/tg-$q-$v-r$r.json") [$(el) s]"
done; done; done
(cd "$OUT" && tar czf callC.tgz --exclude=callC.tgz --exclude=setup . 2>/dev/null)
