#!/usr/bin/env bash
# Branch wip-quant-red on the GPU machine, one call (~9 min): this branch's MoE check first
# (tests/gpu/moe_quant_check.sh), then the A/B of mma_rows' tiles per reduction barrier
# (TT_QUANT_RED_TILES=1, main's, against 4): its kernel cases under 4, QuantGemvSpeed alternated,
# and the 8B's quantized tg128 alternated (bench/quant_bench.sh's setup without llama.cpp).
# Stage here first (a build of this branch): tests/gpu/stage.sh build; then
# cp -r ../shared/tokenizers/llama3 .carry/tokenizers/   (quant_bench.sh's checkpoint needs it)
set -u
C=.carry
[ -x $C/bin/thintensor ] || xz -dc $C/payload.tar.xz | tar -C $C -xf -
carry=$C; source tests/gpu/libs.sh
export OUT=${OUT:-$PWD/gpu-out}; mkdir -p $OUT
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
bash tests/gpu/moe_quant_check.sh 2>&1 | tee $OUT/moe.log | tail -25
TT_QUANT_RED_TILES=4 $C/bin/gpu_tests --gtest_brief=1 --gtest_filter='*gemv_int*:*gemv_gated_int*' >$OUT/kt-red4.log 2>&1
echo "kernel cases under TT_QUANT_RED_TILES=4: rc=$?"; tail -2 $OUT/kt-red4.log
for kr in 1 4 1 4; do
  echo "== QuantGemvSpeed TT_QUANT_RED_TILES=$kr"
  TT_QUANT_RED_TILES=$kr $C/bin/gpu_tests --gtest_filter='CudaKernelsBench.QuantGemvSpeed' 2>&1 | grep -E "int8|int4" | tee -a $OUT/gemv-red$kr.log
done
STEPS=setup LLAMA=0 BENCH_DEADLINE_S=200 BENCH_WORK=/dev/shm/q19 bash bench/quant_bench.sh $C >$OUT/setup.log 2>&1; echo "setup rc=$?"
export THINTENSOR_HOME=/dev/shm/q19/home
for i in 1 2; do for q in int8 int4; do for kr in 1 4; do
  TT_QUANT_RED_TILES=$kr $C/bin/thintensor -q bench /dev/shm/q19/$q.thin --prompt-lengths 0 --gen-tokens 128 --reps 3 --json >$OUT/tg-$q-red$kr-$i.json 2>&1
  echo "$q red$kr #$i $(python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; print(round(r['tokens_per_s'],1), round(r['sd'],1))" $OUT/tg-$q-red$kr-$i.json 2>&1 | tail -1)"
done; done; done
date -u
