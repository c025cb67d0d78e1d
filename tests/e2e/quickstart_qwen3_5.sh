#!/usr/bin/env bash
# The Qwen3.5 quickstart, literally, against the mock Hub (no network, no torch):
#   thintensor pull Qwen/Qwen3.5-0.8B
#   thintensor convert $THINTENSOR_HOME/models/Qwen--Qwen3.5-0.8B --out $WORK/Qwen3.5-0.8B.thin
#   thintensor run $WORK/Qwen3.5-0.8B.thin --prompt "..." --device cpu --temperature 0 --max-tokens 16
#   thintensor validate $WORK/Qwen3.5-0.8B.thin --hf-model <the pulled folder> --suite quick --device cpu
# The repo is a tiny random checkpoint in the published Qwen3.5-0.8B layout (image-text
# Qwen3_5ForConditionalGeneration, text_config, model.language_model.*, tied embeddings, a vision
# tower and an mtp.* layer, the real Qwen3 tokenizer), generated here by make_qwen3_5_checkpoint.py.
# The greedy tokens of `run` are checked against a float64 NumPy forward pass of the same prompt ids
# (qwen3_5_f64_reference.py), which is also the mock transformers that `validate` compares with
# (mock_hf_helper.py). A copy with one linear_attn.A_log perturbed must fail validate.
set -uo pipefail
WORK=$(mktemp -d)
MODEL="$WORK/src"  # what the mock Hub serves
source "$TT_SOURCE_DIR/tests/e2e/lib/mock_hub.sh"
E2E="$TT_SOURCE_DIR/tests/e2e"
PY=/usr/bin/python3
$PY -c 'import numpy' 2>/dev/null || { echo "python3-numpy (Debian) is required: apt-get install python3-numpy"; exit 1; }
n_pass=0 n_fail=0
check() { local what=$1; shift; if "$@"; then n_pass=$((n_pass + 1)); else n_fail=$((n_fail + 1)); echo "FAIL: $what"; return 1; fi; }
json_check() {  # json_check "what" FILE 'python expression on j'
    check "$1" $PY -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if ($3) else 1)" "$2"
}
show() { echo "--- $1"; cat "$1"; }

# The float64 reference itself, anchored to transformers: its logits on ../shared's qwen3_5_text
# fixture (Qwen3_5ForCausalLM, model.*) against transformers' own (max |diff| 1.7e-7 there).
check "the float64 reference reproduces transformers' logits and greedy ids on the qwen3_5_text fixture" \
    $PY "$E2E/qwen3_5_f64_reference.py" --check-fixture "$TT_SHARED_DIR/fixtures/hf-tiny/qwen3_5_text"

$PY "$E2E/make_qwen3_5_checkpoint.py" "$MODEL" --shared "$TT_SHARED_DIR" >"$WORK/make.out" || { echo "make_qwen3_5_checkpoint.py failed"; exit 1; }
start_hub hub --repo Qwen/Qwen3.5-0.8B
export HF_ENDPOINT=$EP

# ---- thintensor pull Qwen/Qwen3.5-0.8B ----
DIR="$THINTENSOR_HOME/models/Qwen--Qwen3.5-0.8B"
"$THINTENSOR" pull Qwen/Qwen3.5-0.8B >"$WORK/pull.out" 2>"$WORK/pull.err"
check "pull succeeds" [ $? -eq 0 ] || show "$WORK/pull.err"
check "pull prints the cache folder $DIR" [ "$(cat "$WORK/pull.out")" = "$DIR" ]
check "the folder exists" [ -d "$DIR" ]
for f in config.json generation_config.json model.safetensors tokenizer.json tokenizer_config.json; do
    check "$f is pulled byte-identical" cmp -s "$MODEL/$f" "$DIR/$f"
done
"$THINTENSOR" list --json >"$WORK/list.json" 2>/dev/null
json_check "list: Qwen/Qwen3.5-0.8B, complete, in that folder" "$WORK/list.json" \
    "[(m['repo'], m['path'], m['complete']) for m in j['models']] == [('Qwen/Qwen3.5-0.8B', '$DIR', True)]"

# ---- thintensor convert ----
THIN="$WORK/Qwen3.5-0.8B.thin"
"$THINTENSOR" convert "$DIR" --out "$THIN" >"$WORK/convert.out" 2>"$WORK/convert.err"
check "convert succeeds" [ $? -eq 0 ] || show "$WORK/convert.err"
check "convert: the vision tower is skipped, said once" \
    [ "$(grep -c "note: the vision tower (3 tensor(s)) is skipped: ThinTensor runs the text model" "$WORK/convert.err")" = 1 ]
check "convert: the multi-token-prediction layer is skipped, said once" \
    [ "$(grep -c "note: the multi-token-prediction layer (2 tensor(s)) is skipped: ThinTensor runs the text model" "$WORK/convert.err")" = 1 ]
"$THINTENSOR" inspect --json "$THIN" >"$WORK/inspect.json"
json_check "inspect: qwen3_5 from Qwen3_5ForConditionalGeneration, 8 layers, tied, the vocab padded to 151680" "$WORK/inspect.json" \
    'j["spec"]["arch"] == "qwen3_5" and j["spec"]["hf_architecture"] == "Qwen3_5ForConditionalGeneration" and j["spec"]["n_layers"] == 8 and j["spec"]["tied_embeddings"] and j["spec"]["vocab_size"] == 151680'
json_check "inspect: mixers delta_net x3, attention, twice" "$WORK/inspect.json" \
    '[l["mixer"] for l in j["spec"]["layers"]] == ["delta_net"] * 3 + ["attention"] + ["delta_net"] * 3 + ["attention"]'
json_check "inspect: the DeltaNet sizes, gated attention, (1+w) norms, partial RoPE (16 * 0.25), eos from generation_config" "$WORK/inspect.json" \
    'j["spec"]["delta_net"] == {"conv_kernel": 4, "k_head_dim": 16, "n_k_heads": 2, "n_v_heads": 4, "v_head_dim": 16} and j["spec"]["attn_output_gate"] and j["spec"]["norm_weight_offset"] == 1.0 and j["spec"]["rope"]["rotary_dim"] == 4 and j["spec"]["rope"]["theta"] == 1e7 and j["spec"]["eos_token_ids"] == [151645, 151643]'
# Every text tensor of the checkpoint and nothing else (no lm_head: tied; no vision, no mtp).
n_text=$($PY -c "import sys; sys.path.insert(0, '$E2E'); from llama_f64_reference import load; print(sum(k.startswith('model.language_model.') for k in load('$DIR/model.safetensors')))")
json_check "inspect: the archive holds the $n_text text tensors" "$WORK/inspect.json" "sum(d['tensors'] for d in j['dtypes'].values()) == $n_text"

# ---- thintensor run, greedy ----
PROMPT="Explain quantum computing in one sentence."
args=(--prompt "$PROMPT" --device cpu --temperature 0 --max-tokens 16)
"$THINTENSOR" run "$THIN" "${args[@]}" >"$WORK/run.out" 2>"$WORK/run.err"
check "run exits 0" [ $? -eq 0 ] || show "$WORK/run.err"
check "run prints text" grep -q '[^[:space:]]' "$WORK/run.out"
check "run reports 16 generated tokens" grep -q "generated 16 tokens" "$WORK/run.err"
"$THINTENSOR" run "$THIN" "${args[@]}" --json >"$WORK/run.json" 2>"$WORK/run_json.err"
check "run --json exits 0" [ $? -eq 0 ] || show "$WORK/run_json.err"
ids=$("$THINTENSOR" tokenize "$THIN" --text "$PROMPT")
check "the prompt encodes to 8 ids" [ "$(wc -w <<<"$ids")" = 8 ]
# shellcheck disable=SC2086
ref_ids=$($PY "$E2E/qwen3_5_f64_reference.py" --greedy "$DIR" 16 $ids)
json_check "run: the prompt's tokens and the stop reason" "$WORK/run.json" \
    'j["prompt_tokens"] == 8 and j["generated_tokens"] == 16 and j["stop_reason"] == "max tokens" and j["text"].strip()'
json_check "run: the greedy ids = the float64 reference's ($ref_ids)" "$WORK/run.json" \
    "j['tokens'] == [int(t) for t in '$ref_ids'.split()] and len(set(j['tokens'])) > 1"

# ---- thintensor validate --hf-model, suite quick, against the float64 mock of transformers ----
export THINTENSOR_HF_HELPER="$E2E/mock_hf_helper.py" THINTENSOR_PYTHON=$PY MOCK_HF_LOG="$WORK/helper.log"
"$THINTENSOR" validate "$THIN" --hf-model "$DIR" --suite quick --device cpu --report "$WORK/v.json" >"$WORK/v.out" 2>"$WORK/v.err"
check "validate --suite quick passes" [ $? -eq 0 ] || { show "$WORK/v.out"; show "$WORK/v.err"; }
check "validate: PASS line for 4 prompts" grep -q "^PASS: 4 prompts" "$WORK/v.out"
check "validate: the helper ran once, on the pulled folder" [ "$(cat "$WORK/helper.log" 2>/dev/null)" = "reference $DIR" ]
json_check "validate report: suite quick, story/fact/list/chat (the chat template), every greedy token equal, cosine ~1" "$WORK/v.json" \
    'j["pass"] and j["suite"] == "quick" and [p["name"] for p in j["prompts"]] == ["story", "fact", "list", "chat"] and all(p["greedy"]["matched"] == p["greedy"]["total"] == 16 for p in j["prompts"]) and j["overall"]["min_cosine"] > 0.99999 and j["overall"]["top1_agreement"] == 1.0 and not j["reference_cached"]'
"$THINTENSOR" validate "$THIN" --hf-model "$DIR" --suite quick --device cpu --json >"$WORK/v2.json" 2>"$WORK/v2.err"
check "validate --json passes again" [ $? -eq 0 ]
check "second validate uses the cached reference" grep -q "using cached transformers reference" "$WORK/v2.err"
json_check "validate --json: stdout is the report, the reference cached" "$WORK/v2.json" 'j["pass"] and j["reference_cached"] and len(j["prompts"]) == 4'

# ---- a broken copy: layer 4's linear_attn.A_log lowered by 2 (A / e^2: its state forgets 7x slower) ----
BROKEN="$WORK/broken"
mkdir -p "$BROKEN" && cp "$DIR"/*.json "$BROKEN/"
$PY - "$DIR/model.safetensors" "$BROKEN/model.safetensors" <<PY
import sys; sys.path.insert(0, "$E2E")
from llama_f64_reference import load, save
w = dict(load(sys.argv[1])); k = "model.language_model.layers.4.linear_attn.A_log"; w[k] = w[k] - 2
save(sys.argv[2], w)
PY
"$THINTENSOR" -q validate "$BROKEN" --hf-model "$DIR" --suite quick --device cpu --report "$WORK/vb.json" >"$WORK/vb.out" 2>"$WORK/vb.err"
check "the perturbed A_log fails validate with status 3" [ $? -eq 3 ] || { show "$WORK/vb.out"; show "$WORK/vb.err"; }
check "the failure names a prompt and position" grep -Eq "^FAIL: prompt '[a-z]+' position [0-9]+: cosine" "$WORK/vb.out"
json_check "broken report: fails, against the same cached reference" "$WORK/vb.json" 'not j["pass"] and j["reference_cached"] and j["overall"]["min_cosine"] < 0.9999'
check "the helper still ran only once" [ "$(wc -l <"$WORK/helper.log")" -eq 1 ]

echo "$n_pass passed, $n_fail failed"
[ "$n_fail" -eq 0 ]
