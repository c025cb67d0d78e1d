#!/usr/bin/env bash
# Issue #16's GPU check: layers computed on the CPU beside the weight stream. For every dense
# fixture (f32 and bf16) at the smallest VRAM budget, with half and then all of the streamed layers
# on the CPU: `validate` against transformers' logits on the CUDA backend, with the tolerances of
# the CUDA checks, and (f32) again with --tune-split moving the count between greedy steps; then
# TinyStories' greedy text across prefill and 200 decode steps with CPU layers, pinned and tuned,
# against the streamed run (the CPU layers' KV rows cross between host and VRAM).
# Sourced by tests/gpu/run.sh (uses its check(), $TT, $S, $work, $GPU_FIXTURES), or run alone:
#   bash tests/gpu/cpu_layers.sh   (after tests/gpu/stage.sh; converts the archives itself)
if [ -z "${TT:-}" ]; then
  set -uo pipefail
  cd "$(dirname "$0")/../.."
  C=.carry
  TT=$C/bin/thintensor; S=$C/shared
  source tests/gpu/libs.sh
  source tests/gpu/fixtures.sh
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
  pass=0; failed=0
  check() { local name=$1; shift; if "$@" >"$work/log" 2>&1; then pass=$((pass+1)); echo "ok   $name"; else failed=$((failed+1)); echo "FAIL $name"; cat "$work/log"; fi; }
  for m in $GPU_FIXTURES; do
    for dt in f32 bf16; do $TT -q convert "$S/fixtures/hf-tiny/$m" -o "$work/$m.$dt.thin" --dtype $dt; done
  done
  $TT -q convert "$S/models/tinystories-656k" -o "$work/ts.thin" --dtype f32
  standalone=1
fi

# The plan and the run must agree on the context: the KV cache is part of the working set.
min_vram() { $TT -q plan "$1" --json --cpu-layers 0 --context "$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["plan"]["min_vram"])'; }
n_streamed() { $TT -q plan "$1" --json --cpu-layers 0 --context "$2" --vram-budget "$3" | python3 -c 'import json,sys; p=json.load(sys.stdin)["plan"]; print(p["n_layers"]-p["n_resident_layers"])'; }
ctx=128  # validate needs the reference's 40 tokens + 24 greedy steps
for m in $GPU_FIXTURES; do
  src=$S/fixtures/hf-tiny/$m
  case $m in qwen3_moe|mixtral|qwen3_5_text) continue;; esac  # MoE: the expert cache; Qwen3.5: no host decode path
  if [ $m = gemma4_text ]; then
    # No host decode path for Gemma 4 either: --cpu-layers is refused, naming why, with a non-zero exit.
    a=$work/$m.f32.thin; b=$(min_vram "$a" $ctx)
    $TT -q validate "$a" --reference "$src/reference.safetensors" --device cuda --context $ctx --vram-budget "$b" --cpu-layers 1 \
      >"$work/g4cpu.out" 2>&1; rc=$?
    check "$m: --cpu-layers refused, naming the reason" sh -c \
      "[ $rc -ne 0 ] && grep -q 'host decode path does not compute yet: every layer stays on the GPU' '$work/g4cpu.out'"
    continue
  fi
  for dt in f32 bf16; do
    a=$work/$m.$dt.thin
    b=$(min_vram "$a" $ctx); ns=$(n_streamed "$a" $ctx "$b")
    [ "${ns:-0}" -gt 0 ] || { echo "skip $m $dt: nothing streams at the minimum budget"; continue; }
    if [ $dt = f32 ]; then tol=(--min-cosine 0.9999 --max-abs-diff 1e-2); else tol=(--key logits_bf16 --min-cosine 0.999 --no-greedy); fi
    for c in $(( (ns + 1) / 2 )) "$ns"; do
      check "$m $dt, $c of $ns streamed layers on the CPU (cuda)" $TT -q validate "$a" --reference "$src/reference.safetensors" \
        --device cuda --context $ctx --vram-budget "$b" --cpu-layers "$c" "${tol[@]}"
    done
    # --tune-split: decode moves the split by its token times (split_tuner.h) during the greedy
    # steps, each move sending the CPU layers' decoded KV rows to VRAM and the new ones' down. f32
    # only: bf16's check skips the greedy steps (--no-greedy), so nothing would be timed there.
    [ $dt = f32 ] && check "$m $dt, the split tuned during decode (cuda)" $TT -q validate "$a" --reference "$src/reference.safetensors" \
      --device cuda --context $ctx --vram-budget "$b" --tune-split "${tol[@]}"
  done
done
b=$(min_vram "$work/ts.thin" 256)
$TT -q run "$work/ts.thin" --temperature 0 --max-tokens 200 --context 256 --device cuda --vram-budget "$b" --cpu-layers 0 >"$work/ts.stream.txt"
$TT -q run "$work/ts.thin" --temperature 0 --max-tokens 200 --context 256 --device cuda --vram-budget "$b" --cpu-layers 2 >"$work/ts.cpu2.txt"
check "tinystories f32 golden text with 2 CPU layers equals the streamed run" cmp "$work/ts.stream.txt" "$work/ts.cpu2.txt"
# --tune-split moves the split between tokens (at least once: it tries a count beside the plan's);
# the text must not notice.
$TT run "$work/ts.thin" --temperature 0 --max-tokens 200 --context 256 --device cuda --vram-budget "$b" --tune-split \
  >"$work/ts.tuned.txt" 2>"$work/ts.tuned.err"
check "tinystories f32 golden text with the split tuned during decode equals the streamed run" cmp "$work/ts.stream.txt" "$work/ts.tuned.txt"
check "the tuner tried two counts or more and said which it kept" \
  grep -Eq 'decode split from token times: .*tried [0-9]+: [0-9.]+, [0-9]+: ' "$work/ts.tuned.err"
grep -h 'decode split from token times' "$work/ts.tuned.err"
$TT -q plan "$work/ts.thin" --context 256 --vram-budget "$b" --cpu-layers 2 | tail -n 12
if [ -n "${standalone:-}" ]; then echo "$pass passed, $failed failed"; [ "$failed" -eq 0 ]; fi
