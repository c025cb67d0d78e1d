#!/usr/bin/env bash
# Issue #17 on the GPU machine, one call: a random-weight Qwen3.5-0.8B-shaped checkpoint made by
# transformers (bf16; transformers' own decode and prefill speed measured on it, its delta-rule
# kernels in their torch fallback), converted to .thin, held to transformers' bf16 logits over a
# 320-token prompt (five 64-token chunks of the DeltaNet rule), then `thintensor bench` (decode
# tg128, prefill pp512/pp2048) beside the bytes-per-token roofline. llama.cpp is not run here.
# Inputs: .carry (tests/gpu/stage.sh). Outputs in $OUT: q35-bench.log, hf.json, validate.json, bench.json.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
OUT="${OUT:-$PWD/q35-out}"; mkdir -p "$OUT"
C=.carry
[ -f $C/payload.tar.xz ] && [ ! -x $C/bin/thintensor ] && xz -dc $C/payload.tar.xz | tar -C $C -xf -
carry=$C; source tests/gpu/libs.sh
TT=$C/bin/thintensor
w=/dev/shm/q35b; rm -rf "$w"; mkdir -p "$w"; trap 'rm -rf "$w"' EXIT
export THINTENSOR_HOME="$w/home"
log="$OUT/q35-bench.log"
{
  date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "== checkpoint (transformers, bf16) and its speed"
  timeout 300 python3 bench/hf_random_model.py qwen3.5-0.8b "$w/hf" "$OUT/hf.json" --ref-len 320 --gen 32 --prefill 2048 2>&1 | tail -3
  echo "== convert"
  $TT -q convert "$w/hf" -o "$w/a.thin" --dtype bf16 && ls -l "$w/a.thin"
  $TT doctor --device 0 --cache-test-mib 0 --python-timeout 30 --json >"$OUT/doctor.json" 2>/dev/null; echo "doctor rc=$?"
  echo "== validate against transformers' bf16 logits (320-token prompt)"
  $TT validate "$w/a.thin" --reference "$w/hf/reference.safetensors" --key logits_bf16 --device cuda --min-cosine 0.999 --no-greedy
  $TT -q validate "$w/a.thin" --reference "$w/hf/reference.safetensors" --key logits_bf16 --device cuda --min-cosine 0.999 --no-greedy --json >"$OUT/validate.json" 2>&1
  echo "== the same archive against the f32 logits of the same weights (transformers, f32 arithmetic): cuda, then the CPU reference"
  $TT -q validate "$w/a.thin" --reference "$w/hf/reference.safetensors" --key logits_f32 --device cuda --min-cosine 0.999 --no-greedy
  timeout 200 $TT -q validate "$w/a.thin" --reference "$w/hf/reference.safetensors" --key logits_f32 --device cpu --min-cosine 0.999 --no-greedy
  echo "== transformers' own bf16 logits against its f32 logits (the bf16 rounding alone)"
  python3 -c "
import torch; from safetensors.torch import load_file
r = load_file('$w/hf/reference.safetensors'); a, b = r['logits_bf16'].double(), r['logits_f32'].double()
c = torch.nn.functional.cosine_similarity(a, b, dim=-1); print(f'transformers bf16 vs f32: min cosine {c.min().item():.8f} at position {c.argmin().item()}, mean {c.mean().item():.8f}')"
  echo "== bench"
  $TT bench "$w/a.thin" --device cuda --prompt-lengths 512,2048 --gen-tokens 128 --reps 3 --json >"$OUT/bench.json" 2>"$OUT/bench.err"; echo "bench rc=$?"
  tail -5 "$OUT/bench.err"
  $TT bench "$w/a.thin" --device cuda --prompt-lengths 512,2048 --gen-tokens 128 --reps 3 2>&1 | tail -12
} >"$log" 2>&1
cat "$log"
