#!/usr/bin/env bash
# Stop 59, prepared; ran at stop 60 (README.md): the planner's allocator slack at 64 MiB instead of 128
# (alloc-slack-64.patch). From the repository root, after
#   git apply bench/pending/2026-12-08-alloc-slack/alloc-slack-64.patch
#   cmake --build build --target thintensor gpu_tests; tests/gpu/stage.sh build
# with main's thintensor in .carry/old.tar.xz as bin/thintensor (about 9 minutes):
# (1) tests/gpu/run.sh on the patch (its streaming and CPU-layer checks pick budgets from the plan)
#     while the random Llama-3-8B is made and converted with --quant int4 in the background;
# (2) old against new at --vram-budget 4GiB (max-max-perf), alternated twice: the plan's placement,
#     then bench with a 512-token prefill and 32 decoded tokens, with nvidia-smi's peak for each.
# Land the patch only if (1) passes, new keeps more layers resident, and new's nvidia-smi peak
# stays under 4096 MiB with the prefill (the slack also holds the kernel images that load lazily,
# cuBLAS's among them, after the plan's NVML reading). Then put the measured margin into the
# patch's N and 2026-12-0X.
export OUT=${OUT:-$PWD/w-out}
source bench/lib/ab.sh
ab_unpack old
ab_checkpoints "llama3-8b:--quant int4"
res=$OUT; log=$OUT/vram.log; t_start=$ab_t0; deadline=560
source bench/lib/steps.sh  # say, note_concurrency (for vram.sh)
source bench/lib/vram.sh
OUT=$OUT/full timeout 330 bash tests/gpu/run.sh >"$OUT/full.out" 2>&1; echo "run.sh rc=$? [$(el) s]"; tail -2 "$OUT/full.out"
grep -E '^\[  (PASSED|FAILED)|tests from .* ran' "$OUT/full/gpu_tests.log" | head -6
ab_wait llama3-8b 420 || { ab_pack; exit 1; }
vram_idle=$(smi_used)
export AB_TG_ARGS="--prompt-lengths 512 --gen-tokens 32 --reps 2" AB_CAP_S=520
for r in 1 2; do for v in old new; do
  [ $r = 1 ] && timeout 30 "$(ab_bin $v)" plan "$ab_work/llama3-8b.thin" --profile max-max-perf --vram-budget 4GiB --context 545 \
    >"$OUT/plan-$v.txt" 2>&1 && tail -1 "$OUT/plan-$v.txt"
  vram_start "4g-$v-r$r"
  ab_tg 4g-r$r $v "$ab_work/llama3-8b.thin" --profile max-max-perf --vram-budget 4GiB
  vram_stop
done; done
ab_pack
