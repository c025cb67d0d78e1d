#!/usr/bin/env bash
# 2026-12-07's one-call session (earlier requests had all been refused; a second was unsure):
# bench/quant_bench.sh's setup in the background (the random Llama-3-8B, its archives, the llama.cpp
# build, Q8_0 / Q4_K_M) and meanwhile the checks of the quantized output projection's deep preload
# (TT_QUANT_DEEP_PRELOAD): the kernel cases (every quantized GEMV case, the deep ones among them) and
# tests/gpu/quant.sh; then
#  1. as soon as the setup has written the 8B INT4 and INT8 archives (before its llama.cpp build
#     ends), their tg128 with the deep preload off and on (INT4 also on with TT_QUANT_WIDE_STEPS=3:
#     INT4's 16-warp GEMV of wide rows with 3 steps a batch), alternated, two rounds;
#  2. quant_bench.sh's bench step with the faster setting (the four formats against Q8_0 / Q4_K_M,
#     4 GiB, KL);
#  3. depth_bench.sh's bench step (the 8B bf16 at depths 0..32k against llama.cpp bf16);
#  4. if time is left, the kernel cases again with TT_QUANT_WIDE_STEPS=3.
# Run from the repository root after tests/gpu/stage.sh and the anchors/tokenizers copies
# (bench/h200_session.sh's header); results in $OUT.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 2
export OUT=${OUT:-$PWD/h200-out}; mkdir -p "$OUT"
work=/dev/shm/q19; state=/dev/shm/q19out
t_start=$(date +%s); deadline=600; log="$OUT/session.log"; res=$OUT; lldir=$work/llama
source tests/gpu/libs.sh
source bench/lib/steps.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
mkdir -p "$state"; rm -f "$state/SETUP_DONE"
setsid nohup bash -c "OUT=$state BENCH_WORK=$work STEPS=setup BENCH_DEADLINE_S=420 bash bench/quant_bench.sh .carry >$state/setup.out 2>&1; echo \"setup rc=\$?\" >$state/SETUP_DONE" </dev/null >/dev/null 2>&1 &
say "setup started"
timeout 200 .carry/bin/gpu_tests --gtest_brief=1 --gtest_filter='Table/KernelCase.*' >"$OUT/kernel-cases.log" 2>&1
say "kernel cases rc=$?: $(tail -2 "$OUT/kernel-cases.log" | tr '\n' ' ')"
grep -E 'FAILED|deep preload' "$OUT/kernel-cases.log" | head -20
OUT=$OUT/quant-sh timeout 150 bash tests/gpu/quant.sh >"$OUT/quant-sh.out" 2>&1
say "quant.sh rc=$?: $(tail -1 "$OUT/quant-sh.out")"; grep -E '^FAIL' "$OUT/quant-sh.out" | head
# The A/B needs only the archives (written by rename: complete once they exist), not the llama.cpp build.
while { [ ! -f "$work/int4.thin" ] || [ ! -f "$work/int8.thin" ]; } && [ ! -f "$state/SETUP_DONE" ] && [ "$(elapsed)" -lt 300 ]; do sleep 3; done
[ -f "$work/int4.thin" ] && [ -f "$work/int8.thin" ] || { say "no archives: stopping"; cat "$state/SETUP_DONE" 2>/dev/null; exit 1; }
for r in 1 2; do
  for v in int4-deep0 int4-deep1 int4-deep1-wide3 int8-deep0 int8-deep1; do
    [ "$(elapsed)" -lt 450 ] || break 2
    m=${v%%-*}; p=max-max-perf; [ $m = int8 ] && p=max-performance
    d=0; [[ $v == *deep1* ]] && d=1
    ws=2; [[ $v == *wide3 ]] && ws=3
    TT_QUANT_DEEP_PRELOAD=$d TT_QUANT_WIDE_STEPS=$ws timeout 60 .carry/bin/thintensor bench "$work/$m.thin" --device cuda --profile $p \
      --prompt-lengths 0 --gen-tokens 128 --reps 3 --json >"$OUT/tg-$v-r$r.json" 2>"$OUT/tg-$v-r$r.err"
    say "$v round $r: $(python3 bench/tg_summary.py "$OUT/tg-$v-r$r.json" 2>/dev/null || tail -2 "$OUT/tg-$v-r$r.err" | tr '\n' ' ')"
  done
done
while [ ! -f "$state/SETUP_DONE" ] && [ "$(elapsed)" -lt 420 ]; do sleep 5; done
say "$(cat "$state/SETUP_DONE" 2>/dev/null || echo 'setup still running')"
cp "$state/q19.log" "$OUT/setup.log" 2>/dev/null
# quant_bench runs with the faster setting of the A/B (INT4's mean; both are recorded above).
win=$(python3 - "$OUT" <<'PY'
import glob, json, sys
def tps(d):
    v = []
    for f in glob.glob(f"{sys.argv[1]}/tg-int4-deep{d}-r*.json"):  # (not the -wide3 runs)
        try: v.append([x for x in json.load(open(f))["results"] if x["test"].startswith("tg")][0]["tokens_per_s"])
        except Exception: pass
    return sum(v) / len(v) if v else 0
print(1 if tps(1) >= tps(0) else 0)
PY
)
export TT_QUANT_DEEP_PRELOAD=${win:-1}; say "quant bench with TT_QUANT_DEEP_PRELOAD=$TT_QUANT_DEEP_PRELOAD"
OUT=$OUT/q19 STEPS=bench KEEP_WORK=1 BENCH_WORK=$work BENCH_DEADLINE_S=$(( 520 - $(elapsed) )) bash bench/quant_bench.sh .carry >"$OUT/q19.out" 2>&1
say "quant bench rc=$?"; head -40 "$OUT/q19/q19-summary.md" 2>/dev/null
unset TT_QUANT_DEEP_PRELOAD
if [ "$(elapsed)" -lt 520 ]; then
  OUT=$OUT/d21 STEPS=bench KEEP_WORK=1 BENCH_WORK=$work BENCH_DEADLINE_S=$(( 585 - $(elapsed) )) TT_BINS="thintensor=$PWD/.carry/bin/thintensor" \
    bash bench/depth_bench.sh .carry >"$OUT/d21.out" 2>&1
  say "depth bench rc=$?"; head -30 "$OUT/d21/d21-summary.md" 2>/dev/null
fi
if [ "$(elapsed)" -lt 540 ]; then
  TT_QUANT_WIDE_STEPS=3 timeout $(( 590 - $(elapsed) )) .carry/bin/gpu_tests --gtest_brief=1 --gtest_filter='Table/KernelCase.*' >"$OUT/kernel-cases-wide3.log" 2>&1
  say "kernel cases with TT_QUANT_WIDE_STEPS=3 rc=$?: $(tail -2 "$OUT/kernel-cases-wide3.log" | tr '\n' ' ')"
fi
rm -rf "$work" "$state"
