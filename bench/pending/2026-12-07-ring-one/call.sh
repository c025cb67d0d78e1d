#!/usr/bin/env bash
# Stop 61, prepared (README.md): the streaming ring of one slot (ring-one.patch applied; --ring-slots; the default where it keeps a
# layer more resident). One device call after tests/gpu/stage.sh of the build under test (about
# 9 minutes):
# (1) tests/gpu/run.sh (Streaming.BitIdenticalToResident now runs the minimum and halfway budgets
#     with one slot and halfway with two; cpu_layers.sh's tuned runs) while the random Llama-3-8B
#     is made and converted with --quant int4 in the background;
# (2) at --vram-budget 4GiB (max-max-perf), pp512 + tg32: --ring-slots 2 against the default (1)
#     and --tune-split, three rounds alternated, each with nvidia-smi's peak; both plans' tables.
export OUT=${OUT:-$PWD/w-out}
source bench/lib/ab.sh
ab_checkpoints "llama3-8b:--quant int4"
D=${DEADLINE:-560}  # seconds this call may run (less when the session's device time is short)
res=$OUT; log=$OUT/vram.log; t_start=$ab_t0; deadline=$D
source bench/lib/steps.sh  # say, note_concurrency (for vram.sh)
source bench/lib/vram.sh
OUT=$OUT/full timeout $(( D - 200 < 340 ? D - 200 : 340 )) bash tests/gpu/run.sh >"$OUT/full.out" 2>&1; echo "run.sh rc=$? [$(el) s]"; tail -2 "$OUT/full.out"
grep -E '^\[  (PASSED|FAILED)|tests from .* ran' "$OUT/full/gpu_tests.log" | head -6
grep -E '^FAIL' "$OUT/full.out" | head
grep -E "identical: .*(ring|halfway|minimum)" "$OUT/full/checks.log" | cut -c1-220 | head -16
ab_wait llama3-8b $(( D - 120 )) || { ab_pack; exit 1; }
m=$ab_work/llama3-8b.thin
for r in 1 2; do
  timeout 30 .carry/bin/thintensor plan "$m" --profile max-max-perf --vram-budget 4GiB --context 545 --ring-slots $r >"$OUT/plan-ring$r.txt" 2>&1
  tail -1 "$OUT/plan-ring$r.txt"
done
vram_idle=$(smi_used)
export AB_TG_ARGS="--prompt-lengths 512 --gen-tokens 32 --reps 2" AB_CAP_S=$(( D - 25 ))
for r in 1 2 3; do
  for v in ring2 ring1 tuned; do
    case $v in ring2) a="--ring-slots 2" ;; ring1) a="" ;; tuned) a="--tune-split" ;; esac
    vram_start "4g-$v-r$r"
    ab_tg 4g-r$r-$v new "$m" --profile max-max-perf --vram-budget 4GiB $a
    vram_stop
  done
done
grep -h "decode split from token times" "$OUT"/tg-4g-r*-tuned-new.err 2>/dev/null | head -3
cat "$OUT/vram.tsv"
ab_pack
