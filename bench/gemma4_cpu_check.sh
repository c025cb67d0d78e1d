#!/usr/bin/env bash
# Issue #18 on the GPU machine's CPU (one device call, up to ~10 min: --suite full on the CPU
# reference took longer than 300 s on 2026-12-01): a random-weight Gemma-4-E2B-shaped checkpoint
# made by transformers (bench/hf_random_model.py gemma4-e2b: per-layer inputs, 35 layers of
# [4 sliding + 1 full] x 7, the last 20 sharing KV, head_dim 256 / 512, double-wide MLPs),
# converted to .thin (bf16) and held, on the CPU reference, to
#   - transformers' f32 arithmetic on the same weights over a 64-token prompt (validate --reference), and
#   - live transformers in float32 (validate --hf-model --suite full: its long prompt is 2 x 512 + 64
#     tokens, past the sliding window), and the seed's command form with --suite quick.
# The CUDA backend refuses Gemma 4 in this build; the GPU here only runs transformers.
# Inputs: .carry (tests/gpu/stage.sh: the binary and shared/tokenizers/gemma3). Outputs in $OUT:
# g4.log, g4-*.json.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
OUT="${OUT:-$PWD/g4-out}"; mkdir -p "$OUT"
C=.carry
carry=$C; source tests/gpu/libs.sh
TT=$C/bin/thintensor
w=/dev/shm/g4; rm -rf "$w"; mkdir -p "$w"; trap 'rm -rf "$w"' EXIT
export THINTENSOR_HOME="$w/home"
{
  date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "== checkpoint (transformers, bf16) and its 64-token reference logits"
  timeout 240 python3 bench/hf_random_model.py gemma4-e2b "$w/hf" "$OUT/g4-hf.json" --no-speed 2>&1 | tail -3
  xz -dc $C/shared/tokenizers/gemma3/tokenizer.json.xz >"$w/hf/tokenizer.json" && cp $C/shared/tokenizers/gemma3/tokenizer_config.json "$w/hf/"
  mv "$w/hf/reference.safetensors" "$w/reference.safetensors"
  echo "== convert"
  $TT -q convert "$w/hf" -o "$w/g4.thin" --dtype bf16 && ls -l "$w/g4.thin"
  $TT inspect "$w/g4.thin" 2>&1 | head -30
  echo "== cpu vs transformers f32 arithmetic, same weights (64 tokens)"
  timeout 120 $TT validate "$w/g4.thin" --reference "$w/reference.safetensors" --key logits_f32 --device cpu --min-cosine 0.99999 --no-greedy
  echo "== cpu vs live transformers float32, --suite full"
  timeout 420 $TT validate "$w/g4.thin" --hf-model "$w/hf" --hf-dtype float32 --hf-device cuda --suite full --device cpu --json >"$OUT/g4-hf-model-f32.json"; echo "rc=$?"
  python3 -c "
import json; v=json.load(open('$OUT/g4-hf-model-f32.json')); o=v['overall']
print('overall', {k: o[k] for k in ('positions','min_cosine','min_cosine_prompt','max_abs_diff','mean_kl','top1_agreement')}, 'pass', v['pass'])
for p in v['prompts']: print(' ', p['name'], p['tokens'], 'tokens', f\"cos {p['min_cosine']:.8f} |d| {p['max_abs_diff']:.2e}\", 'greedy', p.get('greedy',{}).get('matched'), '/', p.get('greedy',{}).get('total'))"
  echo "== the seed's command form: validate M.thin --hf-model DIR --suite quick (transformers in the archive's dtype, bf16)"
  timeout 200 $TT validate "$w/g4.thin" --hf-model "$w/hf" --hf-device cuda --suite quick --device cpu; echo "rc=$?"
} >"$OUT/g4.log" 2>&1
cat "$OUT/g4.log"
