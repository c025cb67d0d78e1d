#!/usr/bin/env bash
# Stop 53, call A (main 6258e88 + bench/profile_decode.sh's BENCH_ARGS): (1) the quantized GEMV's
# per-block timeline (bench/pending/2026-12-06-gemv-timeline, its printf mended), alone on the GPU;
# (2) quant_bench's setup started in the background (lives on to call B); (3) the decode step of
# the Qwen3-0.6B shape under ncu (bench/profile_decode.sh) and its tg128.
cd "$(dirname "$0")/.." || exit 2
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
xz -dc .carry/gpu_tests_tl.xz > .carry/bin/gpu_tests_tl && chmod +x .carry/bin/gpu_tests_tl
timeout 150 .carry/bin/gpu_tests_tl --gtest_filter='CudaKernelsBench.QuantGemvTimeline' > "$OUT/timeline.log" 2>&1; echo "timeline rc=$? [$(el) s]"
grep '^\[timeline\]' "$OUT/timeline.log" || tail -20 "$OUT/timeline.log"
mkdir -p /dev/shm/q19out
setsid nohup bash -c 'OUT=/dev/shm/q19out BENCH_WORK=/dev/shm/q19 STEPS=setup BENCH_DEADLINE_S=900 bash bench/quant_bench.sh .carry > /dev/shm/q19out/setup.out 2>&1; echo "setup rc=$?" > /dev/shm/q19out/SETUP_DONE' </dev/null >/dev/null 2>&1 &
echo "setup started [$(el) s]"
mkdir -p "$OUT/prof"
OUT=$OUT/prof timeout 240 bash bench/profile_decode.sh qwen3-0.6b > "$OUT/prof/run.out" 2>&1; echo "profile qwen3-0.6b rc=$? [$(el) s]"
cat "$OUT/prof/profile.log" | head -30
TT=.carry/bin/thintensor
for r in 1 2; do
  timeout 60 $TT bench /tmp/ttprof/qwen3-0.6b.thin --device cuda --prompt-lengths 0 --gen-tokens 128 --reps 3 --json > "$OUT/prof/tg-qwen3-0.6b-r$r.json" 2>/dev/null
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d['results'] if x['test']=='tg128'][0]; print('qwen3-0.6b tg128', round(r['tokens_per_s'],1), '±', round(r['sd'],1), 'tok/s,', round(r['bytes_per_token']/1e9,3), 'GB/token, copy', round(d.get('device_copy_gbs',0)), 'GB/s')" "$OUT/prof/tg-qwen3-0.6b-r$r.json"
done
echo "[$(el) s] setup so far:"; tail -6 /dev/shm/q19out/q19.log 2>/dev/null
while [ ! -f /dev/shm/q19out/SETUP_DONE ] && [ "$(el)" -lt 540 ]; do sleep 10; done
echo "[$(el) s] $(cat /dev/shm/q19out/SETUP_DONE 2>/dev/null || echo 'setup still running')"; tail -4 /dev/shm/q19out/q19.log
(cd "$OUT" && tar czf callA.tgz --exclude=callA.tgz . )
