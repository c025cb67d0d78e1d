#!/usr/bin/env bash
# Issue #21's benchmark: decode at context depths on the Llama-3-8B shape (a random-weight
# checkpoint made by transformers, bf16), ThinTensor against llama.cpp on the same checkpoint in
# the same run, each figure beside its roofline (weights + the KV cache read at that depth, over
# the device copy rate `bench` measures):
#   ThinTensor   `thintensor bench --depths D --gen-tokens 128` with each binary given (TT_BINS:
#                "name=path ..." — e.g. the change and the commit before it, for an A/B), after a
#                parity check against transformers' logits (512 tokens)
#   llama.cpp    llama-bench -ngl 99 -fa 1 -p 0 -n 128 -d D on the bf16 GGUF of the same checkpoint
# Two GPU-machine calls (a call is at most 600 s), chosen by STEPS; the state stays in BENCH_WORK
# (default /dev/shm/d21) between them, so the second call must come while the machine is warm:
#   STEPS=setup  llama.cpp build (background), the checkpoint, its GGUF (background), the archive
#   STEPS=bench  every measurement and the summary; BENCH_WORK is removed at the end
# Inputs in CARRY_DIR (default .carry): bin/thintensor (+ lib/, or payload.tar.xz), anchors/
# {llama.cpp-src.tar.xz,build_llama.sh}, tokenizers/llama3 (tokenizer.json.xz, tokenizer_config.json).
# Outputs in $OUT: d21.log, d21-summary.md and the JSON of every measurement.
# DEPTHS (default 0,4096,8192,16384,32768); LLAMA=0 leaves llama.cpp out; KV_INT8=1 also runs each
# binary with --kv-cache int8 (named NAME-kv8 in the summary). KEEP_WORK=1 leaves BENCH_WORK in
# place after the bench step: bench/quant_bench.sh's setup makes the same checkpoint, archive, GGUF
# and llama.cpp build (steps.sh's llama3_8b_setup), so one setup can serve both benchmarks, this
# one first (its bench step reads them; quant_bench's removes them). The two share $work/results:
# name no TT_BINS binary bf16, int8 or int4 (quant_bench's bench-NAME.json and validate-NAME.json).
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.." || exit 2
repo=$PWD
carry=$(cd "${1:-.carry}" 2>/dev/null && pwd) || { echo "carry folder ${1:-.carry} not found"; exit 2; }
OUT="${OUT:-$PWD/d21-out}"; mkdir -p "$OUT"
work=${BENCH_WORK:-/dev/shm/d21}
case "$work" in /|/dev/shm|/tmp|"$HOME"|"") echo "BENCH_WORK=$work: give a folder of its own (it is emptied)"; exit 2;; esac
res=$work/results
steps=" ${STEPS:-setup bench} "
depths=${DEPTHS:-0,4096,8192,16384,32768}
export THINTENSOR_HOME="$work/home"
TT=$carry/bin/thintensor
bins=${TT_BINS:-"thintensor=$TT"}
# Each binary as given, and with KV_INT8=1 also with the 8-bit KV cache: "name=path" and
# "name-kv8=path"; kv_args NAME gives the flags of a variant.
runs=$bins
[ "${KV_INT8:-0}" = 1 ] && for spec in $bins; do runs="$runs ${spec%%=*}-kv8=${spec#*=}"; done
kv_args() { case $1 in *-kv8) echo "--kv-cache int8";; esac; }
ck=$work/hf; lldir=$work/llama; gguf=$work/m-bf16.gguf
bin=$lldir/lltrim/build/bin
deadline=${BENCH_DEADLINE_S:-560}
log="$OUT/d21.log"
source "$repo/tests/gpu/libs.sh"
t_start=$(date +%s)
source "$repo/bench/lib/steps.sh"

setup() {
  rm -rf "$work"; mkdir -p "$res" "$THINTENSOR_HOME"
  run_header
  llama3_8b_setup || return 1
  ls -l "$work"/*.thin >>"$log"
}

bench() {
  [ -f "$work/bf16.thin" ] || { say "no archive in $work: run STEPS=setup first (on this machine)"; return 1; }
  wait_quiet "the llama.cpp build and the GGUF conversion" $(( $(left) - 240 ))
  # llama.cpp first: with the deadline near, a second ThinTensor binary (an A/B) is what is left out.
  if [ "${LLAMA:-1}" != 0 ]; then
    if build_ok && gguf_ok; then
      enough 120 "llama-bench" && run_step "llama-bench -ngl 99 -fa 1 -p 0 -n 128 -d $depths -r 2" timeout "$(cap 240)" \
        sh -c "'$bin/llama-bench' -m '$gguf' -ngl 99 -fa 1 -p 0 -n 128 -d $depths -r 2 -o jsonl >'$res/llama-bench.jsonl' 2>'$res/llama-bench.err'"
    else
      say "llama.cpp not ready: build $(grep -o 'BUILD_RC=[0-9]*' "$lldir/build.log" 2>/dev/null || echo running), GGUF $(grep -o 'GGUF_RC=[0-9]*' "$res/gguf-convert.log" || echo running)"
    fi
  fi
  for spec in $runs; do
    name=${spec%%=*}; path=${spec#*=}; extra=$(kv_args "$name")
    [ -x "$path" ] || { say "binary $path ($name) not found"; continue; }
    enough 60 "$name validate" && run_step "$name: validate against transformers' bf16 logits (512 tokens)" timeout "$(cap 90)" \
      sh -c "'$path' -q validate '$work/bf16.thin' --reference '$work/reference.safetensors' --key logits_bf16 --device cuda --min-cosine 0.99 $extra --json >'$res/validate-$name.json'"
    enough 100 "$name bench" && run_step "$name: bench --depths $depths $extra" timeout "$(cap 200)" \
      sh -c "'$path' bench '$work/bf16.thin' --device cuda --prompt-lengths 2048 --gen-tokens 128 --depths $depths --reps 2 $extra --json >'$res/bench-$name.json'"
  done
  python3 "$repo/bench/depth_summary.py" "$res" $runs >"$OUT/d21-summary.md" 2>>"$log"
  cat "$OUT/d21-summary.md" | tee -a "$log"
  cp "$res"/*.json "$res"/*.jsonl "$OUT/" 2>/dev/null
  [ "${KEEP_WORK:-0}" = 1 ] || rm -rf "$work"
}

[[ "$steps" == *" setup "* ]] && setup
[[ "$steps" == *" bench "* ]] && bench
say "done"
