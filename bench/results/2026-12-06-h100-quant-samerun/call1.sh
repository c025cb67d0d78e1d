#!/usr/bin/env bash
# Call 1: quant_bench's setup in the background (lives on between calls), the whole GPU check in front.
cd "$(dirname "$0")/.."
xz -dc .carry/payload.tar.xz | tar -C .carry -xf -
mkdir -p /dev/shm/q19out
( OUT=/dev/shm/q19out BENCH_WORK=/dev/shm/q19 STEPS=setup BENCH_DEADLINE_S=900 setsid nohup bash bench/quant_bench.sh .carry >/dev/shm/q19out/setup.out 2>&1; echo done >/dev/shm/q19out/SETUP_DONE ) </dev/null >/dev/null 2>&1 &
t0=$(date +%s)
timeout 540 bash tests/gpu/run.sh >"$OUT/run.out" 2>&1; echo "run.sh rc=$? in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/run.out"
grep -E '^(FAIL|ok )' "$OUT/run.out" | sort | uniq -c | awk '{print $2}' | sort | uniq -c
grep -A15 '^FAIL' "$OUT/run.out" | head -80
grep -E 'PASSED|FAILED|tests ran' "$OUT/gpu_tests.log" | head
tail -5 "$OUT/run.out"
echo "--- setup so far"; tail -15 /dev/shm/q19out/q19.log
tar -C "$OUT" -czf "$OUT/gpu-check.tgz" --exclude=gpu-check.tgz . 2>/dev/null
