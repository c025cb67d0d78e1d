#!/usr/bin/env bash
# Stop 55, call A (H200 asked): (1) quant_bench's setup in the background (lives on to call B);
# (2) the INT4 GEMV with per-group x exponents: the quantized kernel cases, then
# CudaKernelsBench.QuantGemvSpeed old (main ae683da) against new, alternated twice;
# (3) issue #21's decode step of the Qwen3-0.6B shape under ncu, and its tg128 twice.
cd "$(dirname "$0")/.." || exit 2
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
mkdir -p .carry/old .carry/x2 && xz -dc .carry/old.tar.xz | tar -C .carry/old -xf - && xz -dc .carry/x2.tar.xz | tar -C .carry/x2 -xf - && ls .carry/old
mkdir -p /dev/shm/q19out
setsid nohup bash -c 'OUT=/dev/shm/q19out BENCH_WORK=/dev/shm/q19 STEPS=setup BENCH_DEADLINE_S=900 bash bench/quant_bench.sh .carry > /dev/shm/q19out/setup.out 2>&1; echo "setup rc=$?" > /dev/shm/q19out/SETUP_DONE' </dev/null >/dev/null 2>&1 &
echo "setup started [$(el) s]"
timeout 200 .carry/bin/gpu_tests --gtest_filter='*gemv_int*:*gemv_gated_int*:*dequantize*:*moe_ffn*' > "$OUT/kt-new.log" 2>&1; echo "kernel cases (new) rc=$? [$(el) s]"
timeout 100 .carry/x2/gpu_tests --gtest_filter='*gemv_int4*:*gemv_gated_int4*:*moe_ffn*' > "$OUT/kt-x2.log" 2>&1; echo "kernel cases (x2) rc=$? [$(el) s]"; grep -c -i fail "$OUT/kt-x2.log"
grep -E '^\[  (PASSED|FAILED)|FAIL|cases' "$OUT/kt-new.log" | head -20
for r in 1 2; do for v in old new x2; do
  b=.carry/bin/gpu_tests; [ $v = old ] && b=.carry/old/gpu_tests; [ $v = x2 ] && b=.carry/x2/gpu_tests
  timeout 90 $b --gtest_filter='CudaKernelsBench.QuantGemvSpeed' > "$OUT/gemv-$v-r$r.log" 2>&1; echo "gemv $v r$r rc=$? [$(el) s]"
done; done
for v in old new x2; do echo "--- $v"; grep -h -i 'int4\|int8' "$OUT/gemv-$v-r1.log" | head -24; done
mkdir -p "$OUT/prof"
OUT=$OUT/prof timeout 200 bash bench/profile_decode.sh qwen3-0.6b > "$OUT/prof/run.out" 2>&1; echo "profile qwen3-0.6b rc=$? [$(el) s]"
head -30 "$OUT/prof/profile.log"
TT=.carry/bin/thintensor
for r in 1 2; do
  timeout 60 $TT bench /tmp/ttprof/qwen3-0.6b.thin --device cuda --prompt-lengths 0 --gen-tokens 128 --reps 3 --json > "$OUT/prof/tg-qwen3-0.6b-r$r.json" 2>/dev/null
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['test']=='tg128'][0]; print('qwen3-0.6b tg128', round(r['tokens_per_s'],1), '±', round(r['sd'],1), 'tok/s,', round(r['bytes_per_token']/1e9,3), 'GB/token, copy', round(d.get('device_copy_gbs',0)), 'GB/s')" "$OUT/prof/tg-qwen3-0.6b-r$r.json"
done
echo "[$(el) s] setup so far:"; tail -4 /dev/shm/q19out/q19.log 2>/dev/null
while [ ! -f /dev/shm/q19out/SETUP_DONE ] && [ "$(el)" -lt 545 ]; do sleep 10; done
echo "[$(el) s] $(cat /dev/shm/q19out/SETUP_DONE 2>/dev/null || echo 'setup still running')"; tail -4 /dev/shm/q19out/q19.log
(cd "$OUT" && tar czf callA.tgz --exclude=callA.tgz . )
