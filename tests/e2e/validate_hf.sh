#!/usr/bin/env bash
# `validate --hf-model` and `run`'s transformers fallback without torch (CI has none): the helper's
# absence and a python without torch give clear errors and leave the reference cache empty; with
# tests/e2e/mock_hf_helper.py (tools/thintensor_hf.py's protocol code around a float64 NumPy forward
# pass) the whole pipeline runs: suite -> helper -> cache (hit on the second run) -> comparison ->
# table, JSON, report file and exit status. A checkpoint with one norm weight scaled fails, naming
# the prompt and position. The GPU run against real transformers is bench/validate_hf.sh.
set -uo pipefail
source "$TT_SOURCE_DIR/tests/e2e/lib/common.sh"
F="$S/fixtures/hf-tiny"
PY=/usr/bin/python3
$PY -c 'import numpy' 2>/dev/null || { echo "python3-numpy (Debian) is required: apt-get install python3-numpy"; exit 1; }
MOCK="$TT_SOURCE_DIR/tests/e2e/mock_hf_helper.py"
no_cached_reference() { [ -z "$(find "$THINTENSOR_HOME" -path '*references*' -type f 2>/dev/null)" ]; }
json_check() {  # json_check "what" FILE 'python expression on j'
  check "$1" $PY -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if ($3) else 1)" "$2"
}

"$THINTENSOR" -q convert "$F/llama" -o "$tmp/llama.thin" --dtype f32
"$THINTENSOR" -q convert "$F/llama" -o "$tmp/llama.bf16.thin" --dtype bf16

# ---- missing pieces: clear errors, non-zero exit, nothing cached ----
mkdir -p "$tmp/bin" && cp "$THINTENSOR" "$tmp/bin/thintensor"
fails_with "helper absent" "cannot find the transformers helper thintensor_hf.py: looked in .*$tmp/bin" \
  env -u THINTENSOR_HF_HELPER "$tmp/bin/thintensor" -q validate "$tmp/llama.thin" --hf-model "$F/llama" --device cpu
fails_with "THINTENSOR_HF_HELPER names a missing file" "THINTENSOR_HF_HELPER names $tmp/nope.py, which is not a file" \
  env THINTENSOR_HF_HELPER="$tmp/nope.py" "$THINTENSOR" -q validate "$tmp/llama.thin" --hf-model "$F/llama" --device cpu
fails_with "python missing" "$tmp/nopython: not found.*THINTENSOR_PYTHON" \
  env -u THINTENSOR_HF_HELPER THINTENSOR_PYTHON="$tmp/nopython" "$THINTENSOR" -q validate "$tmp/llama.thin" --hf-model "$F/llama" --device cpu
if $PY -c 'import torch' 2>/dev/null; then
  echo "note: $PY has torch; the 'torch is not installed' case is not checked here"
else
  # The real helper, found beside the binary in the build tree.
  fails_with "python without torch" "torch is not installed for $PY" \
    env -u THINTENSOR_HF_HELPER THINTENSOR_PYTHON=$PY "$THINTENSOR" -q validate "$tmp/llama.thin" --hf-model "$F/llama" --device cpu
fi
fails_with "mock rejects a model it cannot run" "transformers could not load the model" \
  env THINTENSOR_HF_HELPER="$MOCK" THINTENSOR_PYTHON=$PY "$THINTENSOR" -q validate "$F/qwen3" --hf-model "$F/qwen3" --device cpu
check "nothing was written to the reference cache" no_cached_reference
fails_with "--reference and --hf-model together" "give --hf-model DIR or --reference FILE" \
  "$THINTENSOR" -q validate "$tmp/llama.thin" --hf-model "$F/llama" --reference "$F/llama/reference.safetensors"
fails_with "neither" "give --hf-model DIR or --reference FILE" "$THINTENSOR" -q validate "$tmp/llama.thin"
fails_with "--hf-model not a model directory" "--hf-model $tmp: not a Hugging Face model directory" \
  "$THINTENSOR" -q validate "$tmp/llama.thin" --hf-model "$tmp" --device cpu

# ---- the pipeline, against the float64 mock ----
export THINTENSOR_HF_HELPER="$MOCK" THINTENSOR_PYTHON=$PY MOCK_HF_LOG="$tmp/helper.log"
"$THINTENSOR" validate "$tmp/llama.thin" --hf-model "$F/llama" --suite full --device cpu --profile safe \
  --report "$tmp/r1.json" >"$tmp/t1" 2>"$tmp/e1"
check "llama f32, suite full, safe: passes" [ $? -eq 0 ]
check "the table has a row per prompt and PASS" grep -q "^PASS: 8 prompts" "$tmp/t1"
check "the helper ran once" [ "$(wc -l <"$tmp/helper.log")" -eq 1 ]
json_check "report: 8 prompts (no chat: no tokenizer), every greedy token equal, cosine ~1" "$tmp/r1.json" \
  'j["pass"] and len(j["prompts"]) == 8 and all(p["greedy"]["matched"] == p["greedy"]["total"] for p in j["prompts"]) and j["overall"]["min_cosine"] > 0.99999 and j["profile"] == "safe" and not j["reference_cached"]'
json_check "report: long-context prompt is longer than 200 tokens, single-token has one" "$tmp/r1.json" \
  '[p["tokens"] for p in j["prompts"] if p["name"] == "long-context"][0] > 200 and [p["tokens"] for p in j["prompts"] if p["name"] == "single-token"][0] == 1'
"$THINTENSOR" validate "$tmp/llama.thin" --hf-model "$F/llama" --suite full --device cpu --json >"$tmp/r2.json" 2>"$tmp/e2"
check "second run passes" [ $? -eq 0 ]
check "second run uses the cached reference" grep -q "using cached transformers reference" "$tmp/e2"
check "the helper did not run again" [ "$(wc -l <"$tmp/helper.log")" -eq 1 ]
json_check "--json: stdout is the report, balanced profile, cached" "$tmp/r2.json" 'j["pass"] and j["reference_cached"] and j["profile"] == "balanced"'
"$THINTENSOR" -q validate "$tmp/llama.thin" --hf-model "$F/llama" --suite quick --device cpu >/dev/null 2>&1
check "another suite is another cache entry" [ "$(wc -l <"$tmp/helper.log")" -eq 2 ]
"$THINTENSOR" -q validate "$tmp/llama.bf16.thin" --hf-model "$F/llama" --hf-dtype float32 --device cpu --report "$tmp/r3.json" >/dev/null 2>&1
check "bf16 archive vs float32 transformers passes the bf16 bounds" [ $? -eq 0 ]
json_check "bf16 bounds: min cosine 0.999" "$tmp/r3.json" 'j["thresholds"]["min_cosine"] == 0.999 and j["hf_dtype"] == "float32"'
"$THINTENSOR" -q validate "$S/models/tinystories-656k" --hf-model "$S/models/tinystories-656k" --device cpu --report "$tmp/r4.json" >/dev/null 2>&1
check "TinyStories (its own tokenizer), suite quick: passes" [ $? -eq 0 ]
json_check "TinyStories: tokenized prompts, greedy equal" "$tmp/r4.json" \
  'j["pass"] and len(j["prompts"]) == 3 and all(p["greedy"]["matched"] == 16 for p in j["prompts"])'

# ---- a broken checkpoint: layer 1's post-attention norm weight scaled by 3 ----
mkdir -p "$tmp/broken" && cp "$F/llama/config.json" "$tmp/broken/"
$PY - "$F/llama/model.safetensors" "$tmp/broken/model.safetensors" <<PY
import sys; sys.path.insert(0, "$TT_SOURCE_DIR/tests/e2e")
from llama_f64_reference import load, save
w = dict(load(sys.argv[1])); w["model.layers.1.post_attention_layernorm.weight"] = w["model.layers.1.post_attention_layernorm.weight"] * 3
save(sys.argv[2], w)
PY
"$THINTENSOR" -q validate "$tmp/broken" --hf-model "$F/llama" --device cpu >"$tmp/t5" 2>"$tmp/e5"
check "the broken checkpoint fails with status 3" [ $? -eq 3 ]
check "the failure names the prompt and position" grep -Eq "^FAIL: prompt 'story' position [0-9]+: cosine" "$tmp/t5"

# ---- run's transformers fallback ----
ids=$($PY -c "import sys; sys.path.insert(0, '$TT_SOURCE_DIR/tests/e2e'); from llama_f64_reference import load; r = load('$F/mixtral/reference.safetensors'); print(' '.join(map(str, r['input_ids'][:8]))); print(' '.join(map(str, r['greedy_ids'])))")
# An architecture ThinTensor does not run: the Mixtral fixture under a name no converter knows
# (the mock helper computes it as Mixtral; ThinTensor runs real Mixtral natively).
mkdir -p "$tmp/unknown_moe" && cp "$F/mixtral"/* "$tmp/unknown_moe/" && chmod -R u+w "$tmp/unknown_moe"
sed -i 's/"MixtralForCausalLM"/"TestOnlyMixtralForCausalLM"/' "$tmp/unknown_moe/config.json"
"$THINTENSOR" run "$tmp/unknown_moe" -p "$(echo "$ids" | head -1)" -n 24 --temperature 0 --device cpu >"$tmp/fb.out" 2>"$tmp/fb.err"
check "fallback: an unknown architecture runs through the helper" [ $? -eq 0 ]
check "fallback: output = transformers' greedy ids" [ "$(tr -s ' \n' ' ' <"$tmp/fb.out" | sed 's/ $//')" = "$(echo "$ids" | tail -1)" ]
check "fallback: said loudly" grep -q "FALLING BACK to Hugging Face transformers" "$tmp/fb.err"
check "fallback: names the architecture" grep -q "unsupported architecture 'TestOnlyMixtralForCausalLM'" "$tmp/fb.err"
fails_with "--no-fallback" "unknown_moe/config.json: unsupported architecture 'TestOnlyMixtralForCausalLM' \\(supported: LlamaForCausalLM.*--no-fallback" \
  "$THINTENSOR" run "$tmp/unknown_moe" -p "1 2" -n 4 --temperature 0 --no-fallback
fails_with "fallback without python names both causes" "unsupported architecture 'TestOnlyMixtralForCausalLM'.*fallback failed: $tmp/nopython: not found" \
  env THINTENSOR_PYTHON="$tmp/nopython" "$THINTENSOR" run "$tmp/unknown_moe" -p "1 2" -n 4 --temperature 0
if ! $PY -c 'import torch' 2>/dev/null; then
  fails_with "fallback without torch names both causes" "unsupported architecture 'TestOnlyMixtralForCausalLM'.*fallback failed: torch is not installed" \
    env -u THINTENSOR_HF_HELPER THINTENSOR_PYTHON=$PY "$THINTENSOR" run "$tmp/unknown_moe" -p "1 2" -n 4 --temperature 0
fi
check "the helper generated once (the unknown MoE), referenced three times (llama full, quick; TinyStories)" \
  [ "$(grep -c '^generate' "$tmp/helper.log")" -eq 1 -a "$(grep -c '^reference' "$tmp/helper.log")" -eq 3 ]

# ---- NaN in transformers' logits (the mock's MOCK_HF_NAN): every metric NaN-safe, the position named ----
MOCK_HF_NAN=1 "$THINTENSOR" -q validate "$tmp/llama.thin" --hf-model "$F/llama" --device cpu --refresh-reference --report "$tmp/r6.json" \
  >"$tmp/t6" 2>"$tmp/e6"
check "NaN logits fail with status 3" [ $? -eq 3 ]
check "the failure names the prompt, side and position" grep -q "^FAIL: prompt 'story': transformers' logits hold NaN at position 1 (token 3)" "$tmp/t6"
json_check "report: the NaN prompt fails, its metrics are null (NaN), the overall is NaN too" "$tmp/r6.json" \
  'not j["pass"] and j["prompts"][0]["max_abs_diff"] is None and not j["prompts"][0]["pass"] and j["overall"]["max_abs_diff"] is None'

finish
