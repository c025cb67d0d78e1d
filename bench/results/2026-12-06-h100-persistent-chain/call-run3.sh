#!/usr/bin/env bash
# Stop 54, call 3: the persistent-chain experiment with the lean sync, the counters alone and flagged x.
cd "$(dirname "$0")/../.." || exit 2
export OUT=${OUT:-$PWD/w-out}; mkdir -p "$OUT"
source tests/gpu/libs.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
TT_PERSISTENT_CHAIN=1 timeout 60 .carry/bin/gpu_tests --gtest_filter='CudaExperiment.PersistentChain' > "$OUT/chain.log" 2>&1; echo "chain rc=$?"
grep -E '^\[chain\]|FAILED|Failure|error' "$OUT/chain.log" | head -40; tail -3 "$OUT/chain.log"
