#!/usr/bin/env bash
# Issues #19 and #21's H200 figures from one setup, in two GPU-machine calls on the same warm
# machine (each at most 600 s; a machine goes back 30 s after a call, so call 2 must follow at once):
#   CALL=1  bench/quant_bench.sh's setup in the background (llama.cpp build, the random Llama-3-8B,
#           its reference logits, bf16/INT8/INT4 archives, the GGUFs, Q8_0 and Q4_K_M), and
#           meanwhile the Qwen3-0.6B decode step under ncu (bench/profile_decode.sh) and its tg128;
#           then (GPU_TESTS=1) tests/gpu/run.sh, and waits for the setup.
#   CALL=2  bench/depth_bench.sh's bench step on that setup (KEEP_WORK=1: depths 0..32k against
#           llama.cpp bf16), the 8B decode step under ncu (bf16, then INT4 with max-max-perf),
#           bench/small_bench.sh on the setup's llama.cpp build (Qwen3-0.6B and Qwen2.5-0.5B
#           against llama.cpp and calm), and last bench/quant_bench.sh's bench step (the four
#           formats against Q8_0 / Q4_K_M, 4 GiB, KL), which removes the setup (KEEP_WORK=1 keeps
#           it in /dev/shm/q19 for a later call: bf16.thin is the 8B checkpoint's bf16 archive).
#           ONLY_4G=1: quant_bench's 4 GiB part alone.
#   CALL=3  after CALL=2 with KEEP_WORK=1: bench/small_bench.sh on the setup's llama.cpp build,
#           then the INT4 8B at --vram-budget 4GiB with --ring-slots 2 and the plan's default,
#           alternated three times (pp512 + tg32, nvidia-smi's peaks); removes the setup.
#   CALL=0  the record in one call, for a session whose machine may not come twice: the setup in
#           the foreground (nothing beside its llama.cpp build: on 2026-12-07 GPU work beside it
#           left the build unfinished when the bench began), quant_bench's bench step, the depths,
#           then the small models while time lasts; no GPU tests, no profiles. About 510 s on an
#           H200 (setup ~250, formats ~80, depths ~55, small models ~125).
# Binaries and inputs as quant_bench.sh and small_bench.sh take them (tests/gpu/stage.sh, then
# anchors/ with calm/, and tokenizers/llama3 and tokenizers/qwen3 in .carry). Run from the
# repository root; results in $OUT/{q19,d21,small,prof-*}, the tg128 JSONs and vram.tsv in $OUT,
# the log in $OUT/session.log.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
export OUT=${OUT:-$PWD/h200-out}; mkdir -p "$OUT"
work=/dev/shm/q19; state=/dev/shm/q19out
# steps.sh's clock and log, and vram.sh's peak per process (res: where its samples go; lldir: the
# llama.cpp build note_concurrency watches, quant_bench's).
t_start=$(date +%s); deadline=600; log="$OUT/session.log"; res=$OUT; lldir=$work/llama
source tests/gpu/libs.sh
source bench/lib/steps.sh
source bench/lib/vram.sh
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
tg() {  # tg ARCHIVE NAME [ARGS...]: a decode run (TG_ARGS, default tg128) against its roofline (tg_summary.py) and its peak VRAM
  local m=$1 n=$2; shift 2
  vram_start "tg-$n"
  # (TG_ARGS unquoted on purpose: several arguments)
  timeout 90 .carry/bin/thintensor bench "$m" --device cuda ${TG_ARGS:---prompt-lengths 0 --gen-tokens 128 --reps 3} "$@" --json >"$OUT/tg-$n.json" 2>"$OUT/tg-$n.err"
  vram_stop
  say "$n: $(python3 bench/tg_summary.py "$OUT/tg-$n.json" 2>/dev/null || tail -3 "$OUT/tg-$n.err" | tr '\n' ' ')"
}
profile() {  # profile NAME SHAPE [BENCH_ARGS]
  mkdir -p "$OUT/prof-$1"
  BENCH_ARGS="${3:-}" OUT=$OUT/prof-$1 timeout 150 bash bench/profile_decode.sh "$2" >"$OUT/prof-$1/run.out" 2>&1
  say "profile $1 rc=$?"; head -12 "$OUT/prof-$1/profile.log"
}
# The setup's three benchmarks, each by the deadline it is given (seconds from its start):
formats() {  # quant_bench's bench step (the caller's KEEP_WORK decides whether the setup stays)
  OUT=$OUT/q19 STEPS=bench BENCH_WORK=$work BENCH_DEADLINE_S=$1 bash bench/quant_bench.sh .carry >"$OUT/q19.out" 2>&1
  say "quant bench rc=$?"; head -60 "$OUT/q19/q19-summary.md" 2>/dev/null
}
depths() {  # depth_bench's bench step on the setup's checkpoint and llama.cpp build
  OUT=$OUT/d21 STEPS=bench KEEP_WORK=1 BENCH_WORK=$work BENCH_DEADLINE_S=$1 TT_BINS="thintensor=$PWD/.carry/bin/thintensor" \
    bash bench/depth_bench.sh .carry >"$OUT/d21.out" 2>&1
  say "depth bench rc=$?"; head -30 "$OUT/d21/d21-summary.md" 2>/dev/null
}
small() {  # small_bench on the setup's llama.cpp build
  OUT=$OUT/small LLAMA_DIR=$work/llama BENCH_DEADLINE_S=$1 bash bench/small_bench.sh .carry >"$OUT/small.out" 2>&1
  say "small bench rc=$?"; cat "$OUT/small/small-summary.md" 2>/dev/null
}
case "${CALL:-}" in
1)
  mkdir -p "$state"; rm -f "$state/SETUP_DONE"
  setsid nohup bash -c "OUT=$state BENCH_WORK=$work STEPS=setup BENCH_DEADLINE_S=900 bash bench/quant_bench.sh .carry >$state/setup.out 2>&1; echo \"setup rc=\$?\" >$state/SETUP_DONE" </dev/null >/dev/null 2>&1 &
  say "setup started"
  profile qwen3-0.6b qwen3-0.6b
  tg /tmp/ttprof/qwen3-0.6b.thin qwen3-0.6b
  if [ "${GPU_TESTS:-0}" = 1 ]; then  # the GPU tests while the setup runs on (.carry/shared needed)
    OUT=$OUT/gpu-tests timeout $(( 560 - $(elapsed) )) bash tests/gpu/run.sh >"$OUT/gpu-tests.out" 2>&1
    say "tests/gpu/run.sh rc=$?: $(tail -1 "$OUT/gpu-tests.out")"; grep -E '^FAIL' "$OUT/gpu-tests.out" | head
  fi
  while [ ! -f "$state/SETUP_DONE" ] && [ "$(elapsed)" -lt 570 ]; do sleep 10; done
  say "$(cat "$state/SETUP_DONE" 2>/dev/null || echo 'setup still running: wait for it in call 2')"
  tail -4 "$state/q19.log" 2>/dev/null
  ;;
2)
  while [ ! -f "$state/SETUP_DONE" ] && [ "$(elapsed)" -lt 150 ]; do sleep 5; done
  say "$(cat "$state/SETUP_DONE" 2>/dev/null || echo 'setup still running')"
  cp "$state/q19.log" "$OUT/setup.log" 2>/dev/null
  if [ "${ONLY_4G:-0}" != 1 ]; then  # ONLY_4G=1 (an H100, where the rest was measured): quant_bench's 4 GiB part alone
    depths 220
    mkdir -p /tmp/ttprof && ln -sf "$work/bf16.thin" /tmp/ttprof/llama3-8b.thin
    [ "$(elapsed)" -lt 300 ] && profile llama3-8b-bf16 llama3-8b
    [ "$(elapsed)" -lt 360 ] && profile llama3-8b-int4 llama3-8b "--profile max-max-perf"
    [ "$(elapsed)" -lt 300 ] && small $(( 420 - $(elapsed) ))
  fi
  formats $(( 585 - $(elapsed) ))
  ;;
3)
  # After CALL=2 with KEEP_WORK=1 (and ONLY_4G=1): the small models against llama.cpp and calm on
  # the setup's llama.cpp build, then INT4 at 4 GiB with a ring of 2 slots and the plan's default
  # alternated on a quiet host (the plan reads call 2's doctor record); removes the setup.
  [ -f "$work/int4.thin" ] || { say "no setup in $work: CALL=1, then CALL=2 with KEEP_WORK=1, on the same warm machine"; exit 1; }
  small "${SMALL_S:-330}"
  export THINTENSOR_HOME=$work/home
  for r in 1 2 3; do
    for v in ring2 ring1; do
      [ "$(elapsed)" -lt 505 ] || break 2  # (tg's timeout is 90 s; a call ends at 600)
      a=""; [ $v = ring2 ] && a="--ring-slots 2"
      # ($a unquoted on purpose: two arguments or none)
      TG_ARGS="--prompt-lengths 512 --gen-tokens 32 --reps 2" tg "$work/int4.thin" "4g-$v-r$r" --profile max-max-perf --vram-budget 4GiB $a
    done
  done
  rm -rf "$work" "$state"
  ;;
0)
  OUT=$state BENCH_WORK=$work STEPS=setup BENCH_DEADLINE_S=330 bash bench/quant_bench.sh .carry >"$OUT/setup.out" 2>&1
  say "setup rc=$?"; cp "$state/q19.log" "$OUT/setup.log" 2>/dev/null
  [ -f "$work/int4.thin" ] || { say "no archives in $work: stopping"; exit 1; }
  KEEP_WORK=1 formats $(( 440 - $(elapsed) ))
  [ "$(elapsed)" -lt 440 ] && depths $(( 500 - $(elapsed) ))
  [ "$(elapsed)" -lt 470 ] && small $(( 590 - $(elapsed) ))
  rm -rf "$work" "$state"
  ;;
*) echo "usage: CALL=0|1|2|3 bench/h200_session.sh"; exit 2 ;;
esac
