#!/usr/bin/env bash
# Issue #19's benchmark: the quantized profiles on the Llama-3-8B shape (a random-weight checkpoint
# made by transformers, bf16) against llama.cpp's Q8_0 and Q4_K_M made from the same checkpoint
# (llama-quantize), in the same run:
#   ThinTensor   archives converted with --quant int8 / int4 (and bf16 for the baseline): validate
#                against transformers' bf16 logits (KL, top-1, min cosine), `thintensor bench` tg128
#                and pp2048 beside their rooflines, and INT4 at --vram-budget 4GiB (pp512 + tg32, bytes
#                per token; the plan's split with a ring of 1 slot and of 2, and --tune-split)
#   llama.cpp    llama-bench -ngl 99 -fa 1 -p 2048 -n 128 on Q8_0 and Q4_K_M; Q4_K_M split by layers
#                (-ngl N, the rest on the CPU) at ThinTensor's 4 GiB (llama_4g); their KL against the
#                bf16 GGUF's logits (llama-perplexity --kl-divergence, 4 chunks of 512 tokens of text)
# Every measured process's peak VRAM is nvidia-smi's (bench/lib/vram.sh, vram.tsv).
# Two GPU-machine calls (a call is at most 600 s), chosen by STEPS; state in BENCH_WORK (default
# /dev/shm/q19) between them, so the second call must come while the machine is warm:
#   STEPS=setup  llama.cpp build (background), checkpoint + reference logits, the three conversions,
#                the GGUF (background), then llama-quantize Q8_0 and Q4_K_M
#   STEPS=bench  every measurement and the summary; BENCH_WORK is removed at the end
# Inputs in CARRY_DIR (default .carry): bin/thintensor (+ lib/), anchors/{llama.cpp-src.tar.xz,
# build_llama.sh}, tokenizers/llama3 (tokenizer.json.xz, tokenizer_config.json).
# Outputs in $OUT: q19.log, q19-summary.md and q19-results.tgz (every measurement's JSON and log,
# nvidia-smi's samples).
# LLAMA=0 leaves llama.cpp out (ThinTensor's figures only, when the device time is short);
# TT_QUANTS (default "int8 int4") and LL_TYPES (default "Q8_0 Q4_K_M") narrow the run, e.g. to
# INT4 and Q4_K_M with the 4 GiB split when a call's time is short. INT4_GROUPS (e.g. "64 128";
# default none) adds INT4 archives of those group sizes, converted from the same checkpoint, and
# their tg128 beside the default's (docs/QUANTIZATION.md chooses the group size by quality and speed).
# ONLY_4G=1: the bench step runs the 4 GiB part alone (the doctor, INT4's plan, the plan's split
# with 1 and 2 ring slots and tuned, and llama.cpp's Q4_K_M split by layers).
# KEEP_WORK=1 leaves BENCH_WORK in place after the bench step (a later A/B on the same warm machine
# reads its archives instead of making the 8B checkpoint again).
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.." || exit 2
repo=$PWD
carry=$(cd "${1:-.carry}" 2>/dev/null && pwd) || { echo "carry folder ${1:-.carry} not found"; exit 2; }
OUT="${OUT:-$PWD/q19-out}"; mkdir -p "$OUT"
work=${BENCH_WORK:-/dev/shm/q19}
case "$work" in /|/dev/shm|/tmp|"$HOME"|"") echo "BENCH_WORK=$work: give a folder of its own (it is emptied)"; exit 2;; esac
res=$work/results
steps=" ${STEPS:-setup bench} "
tt_quants=${TT_QUANTS:-int8 int4}; ll_types=${LL_TYPES:-Q8_0 Q4_K_M}; int4_groups=${INT4_GROUPS:-}
export THINTENSOR_HOME="$work/home"
TT=$carry/bin/thintensor
ck=$work/hf; lldir=$work/llama; gguf=$work/m-bf16.gguf
bin=$lldir/lltrim/build/bin
deadline=${BENCH_DEADLINE_S:-560}
log="$OUT/q19.log"
source "$repo/tests/gpu/libs.sh"
t_start=$(date +%s)
source "$repo/bench/lib/steps.sh"
source "$repo/bench/lib/vram.sh"  # each measured process's peak VRAM as nvidia-smi shows it: $res/vram.tsv
source "$repo/bench/lib/ngl.sh"  # llama.cpp's -ngl search at 4 GiB

setup() {
  rm -rf "$work"; mkdir -p "$res" "$THINTENSOR_HOME"
  run_header
  llama3_8b_setup || return 1
  # convert_q NAME ARGS: the checkpoint into $work/NAME.thin with --dtype bf16 ARGS, timed.
  convert_q() {
    local name=$1; shift
    run_step "convert --dtype bf16 $*" timeout "$(cap 120)" sh -c "/usr/bin/time -f 'convert $*: wall %e s, max RSS %M KiB' '$TT' -q convert '$ck' -o '$work/$name.thin' --dtype bf16 $*"
  }
  for q in $tt_quants; do convert_q "$q" --quant "$q"; done
  for g in $int4_groups; do convert_q "int4-g$g" --quant int4 --group-size "$g"; done
  ls -l "$work"/*.thin >>"$log"
  wait_quiet "the llama.cpp build and the GGUF conversion" $(( $(left) - 150 ))
  if [ "${LLAMA:-1}" = 0 ]; then :
  elif build_ok && gguf_ok; then
    for t in $ll_types; do
      run_step "llama-quantize $t" timeout "$(cap 150)" "$bin/llama-quantize" "$gguf" "$work/m-$t.gguf" $t
    done
  else
    say "llama.cpp not ready: build $(grep -o 'BUILD_RC=[0-9]*' "$lldir/build.log" 2>/dev/null || echo running), GGUF $(grep -o 'GGUF_RC=[0-9]*' "$res/gguf-convert.log" || echo running)"
  fi
  ls -l "$work"/*.gguf >>"$log" 2>&1
}

# llama.cpp's Q4_K_M at the same memory as ThinTensor's INT4 at --vram-budget 4GiB: the largest
# -ngl whose peak (nvidia-smi) stays within 2% of the larger of 4 GiB and ThinTensor's own peak
# there, the rest of the layers on the CPU's 16 cores (llama.cpp's split by layers). A layer is
# taken as the GGUF's bytes over 34 (32 layers; the output layer and the embedding about a part
# each); bench/lib/ngl.sh makes the first guess and corrects it by each try's measured peak, three
# tries at most. Results: llama-4g-ngl<N>.jsonl, llama-4g.tsv.
llama_4g() {
  local tp target limit part n p tries=0 fit="" over=""
  tp=$(peak_of tt-int4-4g); tp=${tp:-0}
  read -r target limit <<<"$(ngl_limits 4096 "$tp")"
  part=$(( $(stat -c %s "$work/m-Q4_K_M.gguf") / 34 / 1048576 ))
  n=$(ngl_first_guess "$target" "$part" 33)
  say "llama.cpp Q4_K_M at 4 GiB: target peak $target MiB (ThinTensor's $tp MiB), limit $limit MiB, a layer ~$part MiB: first try -ngl $n"
  printf 'ngl\tpeak_mib\tlimit_mib\trc\n' >"$res/llama-4g.tsv"
  while [ $tries -lt 3 ] && [ -n "$n" ] && enough 60 "llama-bench Q4_K_M -ngl $n"; do
    tries=$(( tries + 1 ))
    vram_start "llama-4g-ngl$n"
    run_step "llama-bench Q4_K_M -ngl $n -fa 1 -p 0 -n 32 -r 2 -t $(nproc)" timeout "$(cap 120)" \
      sh -c "'$bin/llama-bench' -m '$work/m-Q4_K_M.gguf' -ngl $n -fa 1 -p 0 -n 32 -r 2 -t $(nproc) -o jsonl >'$res/llama-4g-ngl$n.jsonl' 2>'$res/llama-4g-ngl$n.err'"
    local rc=$?
    vram_stop; p=$last_peak_mib
    printf '%s\t%s\t%s\t%s\n' "$n" "${p:-}" "$limit" "$rc" >>"$res/llama-4g.tsv"
    [ $rc -eq 0 ] && [ -n "$p" ] || { say "llama.cpp -ngl $n: rc=$rc, peak '${p:-}': search stopped"; break; }
    local next
    next=$(ngl_next "$n" "$p" "$limit" "$part" 33 "$fit" "$over")
    if [ "$p" -le "$limit" ]; then fit=$n; else over=$n; fi
    n=$next
  done
  say "llama.cpp Q4_K_M at 4 GiB: -ngl ${fit:-none} fits"
  echo "${fit:-}" >"$res/llama-4g-fit.txt"
}

bench() {
  [ -f "$work/int4.thin" ] || { say "no archives in $work: run STEPS=setup first (on the same warm machine)"; return 1; }
  [ "${ONLY_4G:-0}" = 1 ] || full_device
  at_4g
  python3 bench/quant_summary.py "$res" >"$OUT/q19-summary.md" 2>>"$log"; cat "$OUT/q19-summary.md" >>"$log"
  # Packed: a device call brings back at most 8 files (2026-12-06 lost llama-bench's JSON that way).
  tar -C "$res" -czf "$OUT/q19-results.tgz" . 2>>"$log"
  [ "${KEEP_WORK:-0}" = 1 ] || rm -rf "$work"
}

full_device() {  # every format resident: validate, tg128 and pp2048 against llama.cpp's, their KL
  for a in bf16 $tt_quants; do
    p=balanced; [ $a = int8 ] && p=max-performance; [ $a = int4 ] && p=max-max-perf
    run_step "validate $a ($p) vs transformers logits_bf16 (512 tokens)" timeout "$(cap 60)" \
      sh -c "'$TT' validate '$work/$a.thin' --reference '$work/reference.safetensors' --key logits_bf16 --device cuda --profile $p --no-greedy --json >'$res/validate-$a.json'"
  done
  vram_idle=$(smi_used); say "idle VRAM reading: ${vram_idle:-?} MiB"
  vram_start tt-bf16
  run_step "thintensor bench bf16 (tg128)" timeout "$(cap 60)" \
    sh -c "'$TT' bench '$work/bf16.thin' --device cuda --prompt-lengths 0 --gen-tokens 128 --reps 3 --json >'$res/bench-bf16.json'"
  vram_stop
  for a in $tt_quants; do
    p=max-performance; [ $a = int4 ] && p=max-max-perf
    vram_start tt-$a
    run_step "thintensor bench $a (tg128, pp2048)" timeout "$(cap 90)" \
      sh -c "'$TT' bench '$work/$a.thin' --device cuda --profile $p --prompt-lengths 2048 --gen-tokens 128 --reps 3 --json >'$res/bench-$a.json'"
    vram_stop
  done
  for g in $int4_groups; do  # decode only: the group size changes the bytes a token, not prefill's GEMMs
    [ -f "$work/int4-g$g.thin" ] || { say "no INT4 archive in groups of $g: skipped"; continue; }
    vram_start tt-int4-g$g
    run_step "thintensor bench int4, groups of $g (tg128)" timeout "$(cap 60)" \
      sh -c "'$TT' bench '$work/int4-g$g.thin' --device cuda --profile max-max-perf --prompt-lengths 0 --gen-tokens 128 --reps 3 --json >'$res/bench-int4-g$g.json'"
    vram_stop
  done
  if build_ok; then
    for t in $ll_types; do
      [ -s "$work/m-$t.gguf" ] || continue
      vram_start llama-$t
      run_step "llama-bench $t -ngl 99 -fa 1 -p 2048 -n 128 -r 3" timeout "$(cap 120)" \
        sh -c "'$bin/llama-bench' -m '$work/m-$t.gguf' -ngl 99 -fa 1 -p 2048 -n 128 -r 3 -o jsonl >'$res/llama-bench-$t.jsonl' 2>'$res/llama-bench-$t.err'"
      vram_stop
    done
    # KL of Q8_0 / Q4_K_M against the bf16 GGUF's own logits, over 4 chunks of 512 tokens of text.
    cat "$repo"/docs/*.md "$repo"/README.md >"$work/text.txt"
    if [ -s "$gguf" ] && enough 120 "llama.cpp KL"; then
      run_step "llama-perplexity bf16 (the KL base)" timeout "$(cap 90)" "$bin/llama-perplexity" -m "$gguf" -f "$work/text.txt" -c 512 --chunks 4 -ngl 99 \
        --kl-divergence-base "$work/base.kld"
      for t in $ll_types; do
        run_step "llama-perplexity $t --kl-divergence" timeout "$(cap 60)" sh -c "'$bin/llama-perplexity' -m '$work/m-$t.gguf' -c 512 --chunks 4 -ngl 99 --kl-divergence-base '$work/base.kld' --kl-divergence >'$res/kld-$t.txt' 2>&1"
      done
    fi
  fi
}

at_4g() {
  # The 4 GiB plan splits the layers it cannot hold between PCIe and the CPU by the host's rates.
  # Without a doctor record the backend measures them in about a second: the H200 run of 2026-12-06
  # then streamed 15 layers and computed 1 on the CPU (22.2 tok/s), the H100's of 2026-12-05 8 and 8
  # (44.1 tok/s). The doctor's record, measured with a quiet CPU, is what a user's plan reads.
  # The doctor's host rates and the CPU layers' speed need a quiet host: llama.cpp's build beside
  # them (2026-12-06, H100) had the doctor read host memory at 48.5 GB/s against 213 quiet.
  wait_quiet "the llama.cpp build and the GGUF conversion (the doctor needs a quiet host)" $(( $(left) - 150 )) \
    || say "WARNING: llama.cpp's build or GGUF conversion still runs: the doctor and the 4 GiB run measure a busy host"
  run_step "thintensor doctor (host and PCIe rates for the 4 GiB plan)" timeout "$(cap 150)" \
    sh -c "'$TT' doctor --device 0 --cache-test-mib 0 --python-timeout 60 --json >'$res/doctor.json' 2>'$res/doctor.err'"
  run_step "thintensor plan int4 at --vram-budget 4GiB (its VRAM lines)" timeout "$(cap 30)" \
    sh -c "'$TT' plan '$work/int4.thin' --profile max-max-perf --vram-budget 4GiB --context 545 >'$res/plan-int4-4g.txt' 2>&1"
  vram_start tt-int4-4g
  run_step "thintensor bench int4 at --vram-budget 4GiB (pp512, tg32)" timeout "$(cap 90)" \
    sh -c "'$TT' bench '$work/int4.thin' --device cuda --profile max-max-perf --vram-budget 4GiB --prompt-lengths 512 --gen-tokens 32 --reps 2 --json >'$res/bench-int4-4g.json'"
  vram_stop
  # A ring of 2 slots, as before 2026-12-07: the plan's default of 1 keeps one more layer resident,
  # and the 512-token prompt shows what prefill pays for it.
  vram_start tt-int4-4g-ring2
  run_step "thintensor bench int4 at --vram-budget 4GiB --ring-slots 2 (pp512, tg32)" timeout "$(cap 90)" \
    sh -c "'$TT' bench '$work/int4.thin' --device cuda --profile max-max-perf --vram-budget 4GiB --ring-slots 2 --prompt-lengths 512 --gen-tokens 32 --reps 2 --json >'$res/bench-int4-4g-ring2.json'"
  vram_stop
  # The split chosen from decode's own token times (--tune-split, docs/STREAMING.md): the plan's
  # count was 6-17% behind the best on some hosts (2026-12-07).
  vram_start tt-int4-4g-tuned
  run_step "thintensor bench int4 at --vram-budget 4GiB --tune-split (pp512, tg32)" timeout "$(cap 90)" \
    sh -c "'$TT' bench '$work/int4.thin' --device cuda --profile max-max-perf --vram-budget 4GiB --tune-split --prompt-lengths 512 --gen-tokens 32 --reps 2 --json >'$res/bench-int4-4g-tuned.json'"
  vram_stop
  build_ok && [ -s "$work/m-Q4_K_M.gguf" ] && llama_4g
}

case "$steps" in *" setup "*) setup ;; esac
case "$steps" in *" bench "*) t_start=$(date +%s); bench ;; esac
tail -n 40 "$log"
