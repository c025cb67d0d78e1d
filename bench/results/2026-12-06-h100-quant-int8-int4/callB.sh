#!/usr/bin/env bash
# Stop 53, call B: waits for call A's quant_bench setup; the 8B decode step under ncu (bf16 and
# INT4, on the setup's bf16 archive); then quant_bench's measurements (INT8, INT4, Q8_0, Q4_K_M, 4 GiB).
cd "$(dirname "$0")/.." || exit 2
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
while [ ! -f /dev/shm/q19out/SETUP_DONE ] && [ "$(el)" -lt 200 ]; do sleep 5; done
echo "[$(el) s] $(cat /dev/shm/q19out/SETUP_DONE 2>/dev/null || echo 'setup still running')"
cp /dev/shm/q19out/q19.log "$OUT/setup.log" 2>/dev/null; cp /dev/shm/q19out/setup.out "$OUT/" 2>/dev/null
mkdir -p /tmp/ttprof "$OUT/prof-bf16" "$OUT/prof-int4"
ln -sf /dev/shm/q19/bf16.thin /tmp/ttprof/llama3-8b.thin
export THINTENSOR_HOME=/dev/shm/q19/home
OUT=$OUT/prof-bf16 timeout 150 bash bench/profile_decode.sh llama3-8b > "$OUT/prof-bf16/run.out" 2>&1; echo "profile 8B bf16 rc=$? [$(el) s]"
head -14 "$OUT/prof-bf16/profile.log"
BENCH_ARGS="--profile max-max-perf" OUT=$OUT/prof-int4 timeout 150 bash bench/profile_decode.sh llama3-8b > "$OUT/prof-int4/run.out" 2>&1; echo "profile 8B INT4 rc=$? [$(el) s]"
head -14 "$OUT/prof-int4/profile.log"
OUT=$OUT/q19 STEPS=bench BENCH_WORK=/dev/shm/q19 BENCH_DEADLINE_S=$(( 585 - $(el) )) bash bench/quant_bench.sh .carry > "$OUT/bench.out" 2>&1; echo "bench rc=$? [$(el) s]"
cat "$OUT/q19/q19-summary.md" 2>/dev/null | head -70
tail -5 "$OUT/bench.out"
(cd "$OUT" && tar czf callB.tgz --exclude=callB.tgz . )
