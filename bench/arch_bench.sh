#!/usr/bin/env bash
# The benchmark of a model of a new architecture: a random-weight checkpoint of a real shape (made
# by transformers, bf16), ThinTensor, llama.cpp and transformers on it in the same run, plus parity:
#   parity       validate against transformers' bf16 and f32 logits of a long prompt, on CUDA and on
#                the CPU reference, and `validate --hf-model` against live transformers (--suite
#                full), in bf16 and in float32; for Gemma 4 also the seed's command form (--suite quick)
#   ThinTensor   `thintensor bench` tg128, pp512, pp2048 beside their rooflines, its peak VRAM, and
#                `thintensor plan` (where each block lives)
#   llama.cpp    llama-bench -ngl 99 -fa 1 -p 512,2048 -n 128 on the GGUF of the same weights
#   transformers decode (eager generate) and prefill (one forward) on the same checkpoint
# MODEL, and what differs between them:
#   qwen3.5-0.8b  issue #17 (Gated DeltaNet): reference prompt 320 tokens (five 64-token chunks of the
#                 delta rule); the Qwen3 tokenizer (Qwen3.5's own is not in ../shared; its ids fall
#                 within the 248,320-row vocabulary); the GGUF converter needs an MTP layer named
#   gemma4-e2b    issue #18 (Gemma 4): reference prompt 600 tokens (past the 512-token sliding
#                 window); the Gemma 3 tokenizer (262,145 entries, the checkpoint's vocabulary)
#
# Two GPU-machine calls (a call is at most 600 s), chosen by STEPS; the state stays in BENCH_WORK
# (default /dev/shm/<tag>) between them, so the second call must come while the machine is warm:
#   STEPS=setup  the llama.cpp build in the background (its own session), the checkpoint and its
#                reference logits, both conversions (GGUF in the background), then waits for both
#   STEPS=bench  every measurement, then the summary; BENCH_WORK is removed at the end
# Inputs in CARRY_DIR (default .carry; tests/gpu/stage.sh fills it, then copy anchors/ beside it):
# bin/thintensor (+ lib/), anchors/{llama.cpp-src.tar.xz,build_llama.sh}, the tokenizer
# (tokenizers/NAME or shared/tokenizers/NAME: tokenizer.json.xz, tokenizer_config.json).
# Outputs in $OUT: <tag>.log (every step), <tag>-summary.md, and the JSON of every measurement.
# usage: STEPS=setup|bench bench/arch_bench.sh MODEL [CARRY_DIR]
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.." || exit 2
repo=$PWD
model=${1:-}
case "$model" in
  qwen3.5-0.8b) tag=q35; tok=qwen3; ref_len=320 ;;
  gemma4-e2b) tag=g4; tok=gemma3; ref_len=600 ;;
  *) echo "usage: STEPS=setup|bench bench/arch_bench.sh qwen3.5-0.8b|gemma4-e2b [CARRY_DIR]"; exit 2 ;;
esac
carry=$(cd "${2:-.carry}" 2>/dev/null && pwd) || { echo "carry folder ${2:-.carry} not found"; exit 2; }
OUT="${OUT:-$PWD/$tag-out}"; mkdir -p "$OUT"
work=${BENCH_WORK:-/dev/shm/$tag}
case "$work" in /|/dev/shm|/tmp|"$HOME"|"") echo "BENCH_WORK=$work: give a folder of its own (it is emptied)"; exit 2;; esac
res=$work/results
steps=" ${STEPS:-setup bench} "
export THINTENSOR_HOME="$work/home"
TT=$carry/bin/thintensor
ck=$work/hf; arc=$work/a.thin; gguf=$work/m.gguf; lldir=$work/llama
lb=$lldir/lltrim/build/bin/llama-bench
deadline=${BENCH_DEADLINE_S:-560}
log="$OUT/$tag.log"
source "$repo/tests/gpu/libs.sh"
t_start=$(date +%s)
source "$repo/bench/lib/steps.sh"

setup() {
  rm -rf "$work"; mkdir -p "$res" "$THINTENSOR_HOME"
  run_header
  run_step "llama.cpp build (background, nice 15)" nice -n 15 bash "$carry/anchors/build_llama.sh" "$carry/anchors/llama.cpp-src.tar.xz" "$lldir" --background
  run_step "checkpoint: random $model (transformers init, bf16) and its $ref_len-token reference logits" \
    timeout "$(cap 240)" python3 bench/hf_random_model.py "$model" "$ck" "$res/hf-ckpt.json" --ref-len "$ref_len" --no-speed
  [ -f "$ck/config.json" ] || { say "checkpoint step failed: nothing to measure"; return 1; }
  local tk=$carry/tokenizers/$tok; [ -d "$tk" ] || tk=$carry/shared/tokenizers/$tok  # moe_stage.sh's or stage.sh's
  { xz -dc "$tk/tokenizer.json.xz" >"$ck/tokenizer.json" && cp "$tk/tokenizer_config.json" "$ck/"; } || say "tokenizer copy failed"
  mv "$ck/reference.safetensors" "$work/reference.safetensors"  # keeps the converters to the weights
  run_step "convert to .thin (bf16)" timeout "$(cap 120)" "$TT" -q convert "$ck" -o "$arc" --dtype bf16
  local gsrc=$ck gflags=""
  if [ "$model" = qwen3.5-0.8b ]; then
    # llama.cpp's converter asserts unless the config names an MTP layer; transformers' random init has
    # none, so --no-mtp. A folder of links with that one config change keeps $ck as transformers saved it.
    gsrc=$work/gguf-src; gflags=--no-mtp; mkdir -p "$gsrc"
    for f in "$ck"/*; do [ "$(basename "$f")" = config.json ] || ln -s "$f" "$gsrc/"; done
    python3 -c "import json,sys; c=json.load(open(sys.argv[1])); c['mtp_num_hidden_layers']=1; json.dump(c,open(sys.argv[2],'w'),indent=2)" "$ck/config.json" "$gsrc/config.json"
  fi
  say "=== GGUF conversion started in the background: $res/gguf-convert.log"
  : >"$res/gguf-convert.log"
  setsid nohup bash -c "cd '$lldir/lltrim' && PYTHONPATH='$lldir/lltrim/gguf-py' python3 convert_hf_to_gguf.py '$gsrc' --outtype bf16 $gflags --outfile '$gguf'; echo GGUF_RC=\$?" \
    >>"$res/gguf-convert.log" 2>&1 </dev/null &
  wait_quiet "the llama.cpp build and the GGUF conversion" $(( $(left) - 25 ))
  say "setup done: build $(grep -o 'BUILD_RC=[0-9]*' "$lldir/build.log" 2>/dev/null || echo running), GGUF $(grep -o 'GGUF_RC=[0-9]*' "$res/gguf-convert.log" || echo running)"
  tail -3 "$res/gguf-convert.log" >>"$log"
}

bench() {
  [ -f "$arc" ] || { say "no archive in $work: run STEPS=setup first (on the same warm machine)"; return 1; }
  wait_quiet "the llama.cpp build and the GGUF conversion" $(( $(left) - 400 ))
  { build_ok && gguf_ok; } || say "llama.cpp will not be measured: build $(grep -o 'BUILD_RC=[0-9]*' "$lldir/build.log" 2>/dev/null || echo 'not done'), GGUF $(grep -o 'GGUF_RC=[0-9]*' "$res/gguf-convert.log" 2>/dev/null || echo 'not done')"
  run_step "doctor (the GPU's measured ceilings, for the rooflines)" timeout "$(cap 90)" sh -c "'$TT' doctor --device 0 --cache-test-mib 0 --python-timeout 30 --json >'$res/doctor.json'"
  run_step "transformers speed (bf16, sdpa, eager generate)" \
    timeout "$(cap 150)" python3 bench/hf_random_model.py "$model" "$ck" "$res/hf.json" --speed-only --gen 32 --prefill 2048
  run_step "plan (where each block lives)" timeout "$(cap 30)" sh -c "'$TT' plan '$arc' --json >'$res/plan.json'"
  for key in logits_bf16 logits_f32; do
    run_step "validate cuda vs transformers $key ($ref_len tokens)" timeout "$(cap 60)" \
      sh -c "'$TT' validate '$arc' --reference '$work/reference.safetensors' --key $key --device cuda --min-cosine 0.999 --no-greedy --json >'$res/ref-cuda-$key.json'"
  done
  # (Gemma 4's 4.6 B parameters take the CPU reference ~120 s on 600 tokens: its parity with
  # transformers' f32 arithmetic is held in CI on the fixture instead, and by bench/gemma4_cpu_check.sh.)
  [ "$model" = gemma4-e2b ] || run_step "validate cpu vs transformers logits_f32 ($ref_len tokens)" timeout "$(cap 150)" \
    sh -c "'$TT' validate '$arc' --reference '$work/reference.safetensors' --key logits_f32 --device cpu --min-cosine 0.999 --no-greedy --json >'$res/ref-cpu-logits_f32.json'"
  python3 - "$work/reference.safetensors" >"$res/hf-bf16-vs-f32.txt" 2>&1 <<'PY'
import sys, torch
from safetensors.torch import load_file
r = load_file(sys.argv[1]); a, b = r["logits_bf16"].double(), r["logits_f32"].double()
c = torch.nn.functional.cosine_similarity(a, b, dim=-1)
print(f"transformers bf16 vs its own f32 (same weights): min cosine {c.min().item():.8f} at position {c.argmin().item()}, mean {c.mean().item():.8f}")
PY
  cat "$res/hf-bf16-vs-f32.txt" >>"$log"
  for dt in bfloat16 float32; do
    run_step "validate --hf-model (live transformers $dt, --suite full)" timeout "$(cap 180)" \
      sh -c "'$TT' validate '$arc' --hf-model '$ck' --hf-dtype $dt --suite full --device cuda --json >'$res/hf-model-$dt.json'"
  done
  if [ "$model" = gemma4-e2b ]; then
    # The seed's command form (docs: validate google--gemma-4-E2B.thin --hf-model DIR --suite quick).
    run_step "validate M.thin --hf-model DIR --suite quick (the seed's form)" timeout "$(cap 120)" \
      sh -c "'$TT' validate '$arc' --hf-model '$ck' --suite quick --device cuda --json >'$res/hf-model-quick.json'"
  fi
  run_step "thintensor bench (tg128, pp512, pp2048)" timeout "$(cap 120)" \
    sh -c "'$TT' bench '$arc' --device cuda --prompt-lengths 512,2048 --gen-tokens 128 --reps 3 --json >'$res/bench.json'"
  if build_ok && gguf_ok; then
    run_step "llama-bench -ngl 99 -fa 1 -p 512,2048 -n 128 -r 3" timeout "$(cap 200)" \
      sh -c "'$lb' -m '$gguf' -ngl 99 -fa 1 -p 512,2048 -n 128 -r 3 -o jsonl >'$res/llama-bench.jsonl' 2>'$res/llama-bench.err'"
  fi
  python3 bench/arch_summary.py "$res" "$model" >"$OUT/$tag-summary.md" 2>>"$log"; cat "$OUT/$tag-summary.md" >>"$log"
  cp "$res"/*.json "$res"/*.jsonl "$res"/*.txt "$res"/*.log "$OUT/" 2>/dev/null
  rm -rf "$work"
}

case "$steps" in *" setup "*) setup ;; esac
case "$steps" in *" bench "*) t_start=$(date +%s); bench ;; esac
tail -n 40 "$log"
