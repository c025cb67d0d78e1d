#!/usr/bin/env bash
# Issue #17's benchmark: a random-weight Qwen3.5-0.8B-shaped checkpoint (made by transformers, bf16),
# ThinTensor, llama.cpp and transformers on it in the same run, plus parity:
#   parity       validate against transformers' bf16 and f32 logits of a 320-token prompt (five
#                64-token chunks of the DeltaNet rule), on CUDA and on the CPU reference, and
#                `validate --hf-model` against live transformers (--suite full: its long prompt is
#                512 tokens, eight chunks), in bf16 and in float32
#   ThinTensor   `thintensor bench` tg128, pp512, pp2048 beside their rooflines
#   llama.cpp    llama-bench -ngl 99 -fa 1 -p 512,2048 -n 128 on the GGUF of the same weights
#   transformers decode (eager generate) and prefill (one forward) on the same checkpoint
#
# Two GPU-machine calls (a call is at most 600 s), chosen by STEPS; the state stays in Q35_WORK
# (default /dev/shm/q35) between them, so the second call must come while the machine is warm:
#   STEPS=setup  the llama.cpp build in the background (its own session), the checkpoint and its
#                reference logits, both conversions (GGUF in the background), then waits for both
#   STEPS=bench  every measurement, then the summary; Q35_WORK is removed at the end
# Inputs in CARRY_DIR (default .carry; bench/moe_stage.sh fills it): bin/thintensor (+ lib/),
# anchors/{llama.cpp-src.tar.xz,build_llama.sh}, tokenizers/qwen3/{tokenizer.json.xz,tokenizer_config.json}.
# The checkpoint carries the Qwen3 tokenizer (Qwen3.5's own is not in ../shared; its ids fall
# within the 248,320-row vocabulary), which the GGUF converter and --hf-model's text prompts need.
# Outputs in $OUT: q35.log (every step), q35-summary.md, and the JSON of every measurement.
# usage: STEPS=setup|bench bench/qwen3_5_bench.sh [CARRY_DIR]
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.." || exit 2
repo=$PWD
carry=$(cd "${1:-.carry}" 2>/dev/null && pwd) || { echo "carry folder ${1:-.carry} not found"; exit 2; }
OUT="${OUT:-$PWD/q35-out}"; mkdir -p "$OUT"
work=${Q35_WORK:-/dev/shm/q35}
case "$work" in /|/dev/shm|/tmp|"$HOME"|"") echo "Q35_WORK=$work: give a folder of its own (it is emptied)"; exit 2;; esac
res=$work/results
steps=" ${STEPS:-setup bench} "
export THINTENSOR_HOME="$work/home"
TT=$carry/bin/thintensor
[ -f "$carry/payload.tar.xz" ] && [ ! -x "$TT" ] && xz -dc "$carry/payload.tar.xz" | tar -C "$carry" -xf -
ck=$work/hf; arc=$work/a.thin; gguf=$work/m.gguf; lldir=$work/llama
lb=$lldir/lltrim/build/bin/llama-bench
deadline=${Q35_DEADLINE_S:-560}
log="$OUT/q35.log"
source "$repo/tests/gpu/libs.sh"
t_start=$(date +%s)
source "$repo/bench/lib/steps.sh"
build_running() { [ -f "$lldir/build.log" ] && ! grep -q '^BUILD_RC=' "$lldir/build.log"; }
gguf_running() { [ -f "$res/gguf-convert.log" ] && ! grep -q '^GGUF_RC=' "$res/gguf-convert.log"; }
build_ok() { grep -q '^BUILD_RC=0' "$lldir/build.log" 2>/dev/null && [ -x "$lb" ]; }
gguf_ok() { grep -q '^GGUF_RC=0' "$res/gguf-convert.log" 2>/dev/null && [ -s "$gguf" ]; }

setup() {
  rm -rf "$work"; mkdir -p "$res" "$THINTENSOR_HOME"
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    grep -m1 'model name' /proc/cpuinfo; nproc
    python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
  } >>"$log" 2>&1
  run_step "llama.cpp build (background, nice 15)" nice -n 15 bash "$carry/anchors/build_llama.sh" "$carry/anchors/llama.cpp-src.tar.xz" "$lldir" --background
  run_step "checkpoint: random qwen3.5-0.8b (transformers init, bf16) and its 320-token reference logits" \
    timeout "$(cap 240)" python3 bench/hf_random_model.py qwen3.5-0.8b "$ck" "$res/hf-ckpt.json" --ref-len 320 --no-speed
  [ -f "$ck/config.json" ] || { say "checkpoint step failed: nothing to measure"; return 1; }
  local tk=$carry/tokenizers/qwen3; [ -d "$tk" ] || tk=$carry/shared/tokenizers/qwen3  # moe_stage.sh's or stage.sh's
  { xz -dc "$tk/tokenizer.json.xz" >"$ck/tokenizer.json" && cp "$tk/tokenizer_config.json" "$ck/"; } || say "tokenizer copy failed"
  mv "$ck/reference.safetensors" "$work/reference.safetensors"  # keeps the converters to the weights
  run_step "convert to .thin (bf16)" timeout "$(cap 120)" "$TT" -q convert "$ck" -o "$arc" --dtype bf16
  # llama.cpp's converter asserts unless the config names an MTP layer; transformers' random init has
  # none, so --no-mtp. A folder of links with that one config change keeps $ck as transformers saved it.
  local gsrc=$work/gguf-src; mkdir -p "$gsrc"
  for f in "$ck"/*; do [ "$(basename "$f")" = config.json ] || ln -s "$f" "$gsrc/"; done
  python3 -c "import json,sys; c=json.load(open(sys.argv[1])); c['mtp_num_hidden_layers']=1; json.dump(c,open(sys.argv[2],'w'),indent=2)" "$ck/config.json" "$gsrc/config.json"
  say "=== GGUF conversion started in the background: $res/gguf-convert.log"
  : >"$res/gguf-convert.log"
  setsid nohup bash -c "cd '$lldir/lltrim' && PYTHONPATH='$lldir/lltrim/gguf-py' python3 convert_hf_to_gguf.py '$gsrc' --outtype bf16 --no-mtp --outfile '$gguf'; echo GGUF_RC=\$?" \
    >>"$res/gguf-convert.log" 2>&1 </dev/null &
  while { build_running || gguf_running; } && [ "$(left)" -gt 25 ]; do sleep 3; done
  say "setup done: build $(grep -o 'BUILD_RC=[0-9]*' "$lldir/build.log" 2>/dev/null || echo running), GGUF $(grep -o 'GGUF_RC=[0-9]*' "$res/gguf-convert.log" || echo running)"
  tail -3 "$res/gguf-convert.log" >>"$log"
}

bench() {
  [ -f "$arc" ] || { say "no archive in $work: run STEPS=setup first (on the same warm machine)"; return 1; }
  while { build_running || gguf_running; } && [ "$(left)" -gt 400 ]; do sleep 3; done
  { build_ok && gguf_ok; } || say "llama.cpp will not be measured: build $(grep -o 'BUILD_RC=[0-9]*' "$lldir/build.log" 2>/dev/null || echo 'not done'), GGUF $(grep -o 'GGUF_RC=[0-9]*' "$res/gguf-convert.log" 2>/dev/null || echo 'not done')"
  run_step "doctor (the GPU's measured ceilings, for the rooflines)" timeout "$(cap 90)" sh -c "'$TT' doctor --device 0 --cache-test-mib 0 --python-timeout 30 --json >'$res/doctor.json'"
  run_step "transformers speed (bf16, sdpa, eager generate)" \
    timeout "$(cap 150)" python3 bench/hf_random_model.py qwen3.5-0.8b "$ck" "$res/hf.json" --speed-only --gen 32 --prefill 2048
  for key in logits_bf16 logits_f32; do
    run_step "validate cuda vs transformers $key (320 tokens)" timeout "$(cap 60)" \
      sh -c "'$TT' validate '$arc' --reference '$work/reference.safetensors' --key $key --device cuda --min-cosine 0.999 --no-greedy --json >'$res/ref-cuda-$key.json'"
  done
  run_step "validate cpu vs transformers logits_f32 (320 tokens)" timeout "$(cap 150)" \
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
  run_step "thintensor bench (tg128, pp512, pp2048)" timeout "$(cap 120)" \
    sh -c "'$TT' bench '$arc' --device cuda --prompt-lengths 512,2048 --gen-tokens 128 --reps 3 --json >'$res/bench.json'"
  if build_ok && gguf_ok; then
    run_step "llama-bench -ngl 99 -fa 1 -p 512,2048 -n 128 -r 3" timeout "$(cap 200)" \
      sh -c "'$lb' -m '$gguf' -ngl 99 -fa 1 -p 512,2048 -n 128 -r 3 -o jsonl >'$res/llama-bench.jsonl' 2>'$res/llama-bench.err'"
  fi
  python3 bench/qwen3_5_summary.py "$res" >"$OUT/q35-summary.md" 2>>"$log"; cat "$OUT/q35-summary.md" >>"$log"
  cp "$res"/*.json "$res"/*.jsonl "$res"/*.txt "$res"/*.log "$OUT/" 2>/dev/null
  rm -rf "$work"
}

case "$steps" in *" setup "*) setup ;; esac
case "$steps" in *" bench "*) t_start=$(date +%s); bench ;; esac
tail -n 40 "$log"
