#!/usr/bin/env bash
# Nsight Compute on the quantized decode GEMVs (the Llama-3-8B shapes of
# tests/gpu/bench_quant_gemv.cpp, one launch each, caches flushed before each): every section, so
# the stall reasons, the memory traffic and the tail of each kernel are there to read.
# usage (GPU machine, after tests/gpu/stage.sh): bench/profile_quant_gemv.sh; results in $OUT
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/bench-out}"; mkdir -p "$OUT"
source tests/gpu/libs.sh
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
TT_GEMV_PROFILE=1 "$NCU" --clock-control none --set full --kernel-name regex:gemv -o "$OUT/quant_gemv" -f \
  .carry/bin/gpu_tests --gtest_filter='CudaKernelsBench.QuantGemvSpeed' >"$OUT/ncu.log" 2>&1
"$NCU" -i "$OUT/quant_gemv.ncu-rep" --page details >"$OUT/quant_gemv.txt" 2>&1
"$NCU" -i "$OUT/quant_gemv.ncu-rep" --page raw --csv >"$OUT/quant_gemv_raw.csv" 2>&1
tail -5 "$OUT/ncu.log"; ls -la "$OUT"
