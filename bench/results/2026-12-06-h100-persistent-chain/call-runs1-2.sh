#!/usr/bin/env bash
# Stop 54, call 1: the persistent-chain experiment; on an H200, quant_bench's setup started in the background for call 2.
cd "$(dirname "$0")/../.." || exit 2
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
TT_PERSISTENT_CHAIN=1 timeout 90 .carry/bin/gpu_tests --gtest_filter='CudaExperiment.PersistentChain' > "$OUT/chain.log" 2>&1; echo "chain rc=$? [$(el) s]"
grep -E '^\[chain\]|FAILED|Failure|error' "$OUT/chain.log" | head -40; tail -5 "$OUT/chain.log"
if grep -q H200 "$OUT/gpu.txt"; then
  mkdir -p /dev/shm/q19out
  setsid nohup bash -c 'OUT=/dev/shm/q19out BENCH_WORK=/dev/shm/q19 STEPS=setup BENCH_DEADLINE_S=900 bash bench/quant_bench.sh .carry > /dev/shm/q19out/setup.out 2>&1; echo "setup rc=$?" > /dev/shm/q19out/SETUP_DONE' </dev/null >/dev/null 2>&1 &
  echo "setup started [$(el) s]"
fi
