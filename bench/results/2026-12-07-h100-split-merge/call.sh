#!/usr/bin/env bash
# 2026-12-07 (stop 64): decode attention's split merge in one L2 trip (issue #21), on whatever GPU came
# (the call named none: an H100 came). The patch is split-merge.patch, not landed.
#   new = main e7c7e3a + split-merge.patch (tests/gpu/stage.sh), old = main e7c7e3a (.carry/old.tar.xz).
# 1. in the background: transformers' random Llama-3-8B (bf16) and its bf16 archive;
# 2. the kernel-case table on new (every kernel against the CPU reference, the new multi-chunk merge
#    cases among them; the end-to-end fixtures' prompts keep one split active, so the merge is the
#    kernel cases' to check);
# 3. CudaKernelsBench.DecodeAttentionSpeed (the kernel alone, 128..32k keys), old / new / old / new;
# 4. the 8B decode at depths 0, 4096, 16384, 32768 (tg128), old / new alternated, two rounds, with
#    new also at 1 and 3 decode attention blocks per SM (TT_DECODE_BLOCKS_PER_SM; 2 is the default).
# Run from the repository root; results in $OUT.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 2
export OUT=${OUT:-$PWD/h200-out}; mkdir -p "$OUT"
t_start=$(date +%s); deadline=600; log="$OUT/session.log"; res=$OUT
source tests/gpu/libs.sh
source bench/lib/steps.sh
mkdir -p .carry/old && xz -dc .carry/old.tar.xz | tar -C .carry/old -xf -
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
ab=/dev/shm/ab; rm -rf $ab; mkdir -p $ab
setsid nohup bash -c "python3 bench/hf_random_model.py llama3-8b $ab/hf $ab/ck.json --ref-len 16 --no-speed --no-f32 >$ab/ck.log 2>&1 && .carry/bin/thintensor -q convert $ab/hf -o $ab/bf16.thin --dtype bf16 >>$ab/ck.log 2>&1; echo rc=\$? >$ab/DONE" </dev/null >/dev/null 2>&1 &
say "checkpoint started"
timeout 200 .carry/bin/gpu_tests --gtest_brief=1 --gtest_filter='Table/KernelCase.*' >"$OUT/kernel-cases.log" 2>&1
say "kernel cases rc=$?: $(tail -2 "$OUT/kernel-cases.log" | tr '\n' ' ')"; grep -E 'FAILED' "$OUT/kernel-cases.log" | head
for r in 1 2; do
  for v in old new; do
    b=.carry/bin/gpu_tests; [ $v = old ] && b=.carry/old/gpu_tests
    timeout 40 $b --gtest_filter=CudaKernelsBench.DecodeAttentionSpeed >"$OUT/attn-$v-r$r.txt" 2>&1
    say "microbench $v round $r rc=$?"
  done
done
grep -h '\[bench\]' "$OUT"/attn-*-r1.txt | grep 'tensor cores splits  *\(33\|132\|8\) ' | head -24
while [ ! -f $ab/DONE ] && [ "$(elapsed)" -lt 440 ]; do sleep 3; done
say "checkpoint: $(cat $ab/DONE 2>/dev/null || echo 'not ready')"; tail -3 $ab/ck.log
for r in 1 2; do
  for v in old new new-b1 new-b3; do
    [ "$(elapsed)" -lt 470 ] || break 2
    b=.carry/bin/thintensor; [ $v = old ] && b=.carry/old/thintensor
    bps=2; [ $v = new-b1 ] && bps=1; [ $v = new-b3 ] && bps=3
    TT_DECODE_BLOCKS_PER_SM=$bps timeout 60 $b bench $ab/bf16.thin --device cuda --prompt-lengths 0 --depths 0,4096,16384,32768 --gen-tokens 128 --reps 2 --json >"$OUT/depth-$v-r$r.json" 2>"$OUT/depth-$v-r$r.err"
    say "depths $v round $r rc=$?: $(python3 bench/tg_summary.py "$OUT/depth-$v-r$r.json" --all 2>&1 | tail -1)"
  done
done
rm -rf $ab
