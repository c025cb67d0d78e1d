#!/usr/bin/env bash
# convert and `run DIR` against the inputs of issue 14, through the CLI: an output path over the
# source checkpoint (read-only), empty or directory outputs, configs that ask for a billion layers
# or 64-bit counts, NaN weights, wrong tokenizers, and the --json summaries of convert and verify.
# Broken checkpoints are copies of ../shared fixtures in a temp dir.
set -euo pipefail
: "${THINTENSOR:?}" "${TT_SHARED_DIR:?}"
. "$(dirname "$0")/lib/common.sh"
T="$THINTENSOR"; PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
llama="$S/fixtures/hf-tiny/llama"
fresh() { rm -rf "$tmp/$1"; mkdir -p "$tmp/$1"; cp "$2"/* "$tmp/$1/"; chmod -R u+w "$tmp/$1"; }
set_config() {  # set_config DIR KEY JSON-VALUE
  "$PY" - "$1/config.json" "$2" "$3" <<'PYEOF'
import json, sys
p, k, v = sys.argv[1:]
c = json.load(open(p)); c[k] = json.loads(v); json.dump(c, open(p, "w"))
PYEOF
}

# --- the output path --------------------------------------------------------------------------
fresh src "$llama"; chmod a-w "$tmp/src/model.safetensors"; sum=$(cksum <"$tmp/src/model.safetensors")
fails_with "-o over the read-only source weights" "error: --out .*model.safetensors: is a file of the source checkpoint" \
  "$T" convert "$tmp/src" -o "$tmp/src/model.safetensors"
fails_with "-o over the source through ./" "error: --out .*: is a file of the source checkpoint" \
  "$T" convert "$tmp/src" -o "$tmp/src/./config.json"
check "source weights untouched" [ "$(cksum <"$tmp/src/model.safetensors")" = "$sum" ]
check "no temp file in the source" [ "$(ls "$tmp/src" | wc -l)" -eq "$(ls "$llama" | wc -l)" ]
fresh noweights "$llama"; rm "$tmp/noweights/model.safetensors"  # -o is refused before any work
fails_with '-o ""' "error: --out: the output path is empty" "$T" convert "$tmp/noweights" -o ""
fails_with "-o ." "error: --out \.: is a directory" "$T" convert "$tmp/noweights" -o .
fails_with "-o DIR/" "error: --out .*: is a directory" "$T" convert "$tmp/noweights" -o "$tmp/"

# --- config sizes: bounded before anything per layer is built (convert and run DIR) ---------------
fresh huge "$llama"; set_config "$tmp/huge" num_hidden_layers 1000000000
fails_with "convert: 10^9 layers" "config.json: 'num_hidden_layers' is 1000000000, outside the supported range" \
  timeout 20 "$T" convert "$tmp/huge" -o "$tmp/huge.thin"
fails_with "run DIR: 10^9 layers" "config.json: 'num_hidden_layers' is 1000000000, outside the supported range" \
  timeout 20 "$T" run "$tmp/huge" -p hi -n 1 --device cpu
set_config "$tmp/huge" num_hidden_layers 4294967298
fails_with "2^32+2 layers" "'num_hidden_layers' is 4294967298" "$T" convert "$tmp/huge" -o "$tmp/huge.thin"
set_config "$tmp/huge" num_hidden_layers -1
fails_with "negative layers" "'num_hidden_layers' is -1, outside" "$T" convert "$tmp/huge" -o "$tmp/huge.thin"
set_config "$tmp/huge" num_hidden_layers 900
fails_with "more layers than the checkpoint" "num_hidden_layers is 900 but the checkpoint has tensors for 2 layer" \
  "$T" convert "$tmp/huge" -o "$tmp/huge.thin"
fresh eos "$llama"; set_config "$tmp/eos" eos_token_id '"2"'
fails_with 'eos_token_id: "2"' "config.json: 'eos_token_id' must be an integer or a list of integers" \
  "$T" convert "$tmp/eos" -o "$tmp/eos.thin"
check "no archive from 10^9 layers" [ ! -e "$tmp/huge.thin" ]
check "no archive from a bad eos" [ ! -e "$tmp/eos.thin" ]

# --- NaN weights ------------------------------------------------------------------------------
fresh nan "$llama"
"$PY" - "$tmp/nan/model.safetensors" <<'PYEOF'
import json, struct, sys
p = sys.argv[1]; raw = bytearray(open(p, "rb").read())
n = struct.unpack("<Q", raw[:8])[0]; h = json.loads(raw[8:8 + n])
t = h["model.layers.0.self_attn.k_proj.weight"]; assert t["dtype"] == "F32"
struct.pack_into("<f", raw, 8 + n + t["data_offsets"][0] + 4 * 77, float("nan"))
open(p, "wb").write(raw)
PYEOF
fails_with "NaN weight" "tensor 'model.layers.0.self_attn.k_proj.weight' has 1 non-finite value\(s\) \(first bad value: NaN at index 77\)" \
  "$T" convert "$tmp/nan" -o "$tmp/nan.thin"
check "no archive from NaN weights" [ ! -e "$tmp/nan.thin" ]
if "$T" convert "$tmp/nan" -o "$tmp/nan.thin" --allow-nonfinite 2>"$tmp/e" >/dev/null; then
  check "--allow-nonfinite warns naming the tensor" grep -q "warning: .*model.layers.0.self_attn.k_proj.weight" "$tmp/e"
else check "--allow-nonfinite converts" false; fi

# --- tokenizers that used to fail only at run ---------------------------------------------------
fresh tok "$llama"
fails_with "--tokenizer config.json" "not a tokenizer.json .*config.json" \
  "$T" convert "$tmp/tok" -o "$tmp/tok.thin" --tokenizer "$llama/config.json"
fails_with "--tokenizer GGUF" "error: --tokenizer .*stories260K.gguf: is a GGUF file" \
  "$T" convert "$tmp/tok" -o "$tmp/tok.thin" --tokenizer "$S/models/stories260K/stories260K.gguf"
printf '{"model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}}' >"$tmp/wp.json"
fails_with "--tokenizer WordPiece" "wp.json.*WordPiece" "$T" convert "$tmp/tok" -o "$tmp/tok.thin" --tokenizer "$tmp/wp.json"
fails_with "tokenizer ids beyond the vocabulary" "the tokenizer's vocabulary has 512 tokens but the model's has 256 rows" \
  "$T" convert "$tmp/tok" -o "$tmp/tok.thin" --tokenizer "$S/models/stories260K/tok512.bin"
# Added tokens past the embedding rows (Gemma 3 1B lists <image_soft_token> as id 262144 of 262144
# rows): a warning naming them, and the archive converts, verifies and runs.
mkdir -p "$tmp/extra" && cp "$S/models/tinystories-656k/"*.json "$S/models/tinystories-656k/model.safetensors" "$tmp/extra/"
"$PY" - "$tmp/extra/tokenizer.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["added_tokens"].append({"id": 2048, "content": "<extra_image>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True})
json.dump(t, open(sys.argv[1], "w"))
PY
"$T" convert "$tmp/extra" -o "$tmp/extra.thin" >/dev/null 2>"$tmp/extra.err"
check "added tokens past the rows: converts" test -s "$tmp/extra.thin"
check "added tokens past the rows: a warning names them" grep -q "added tokens with ids 2048..2048 lie past the model's 2048 embedding rows" "$tmp/extra.err"
check "added tokens past the rows: verify passes" "$T" -q verify "$tmp/extra.thin"
check "added tokens past the rows: runs" "$T" -q run "$tmp/extra.thin" -p "Once" -n 4 --device cpu

# --- --json -----------------------------------------------------------------------------------
"$T" -q convert "$S/models/tinystories-656k" -o "$tmp/ts.thin" --json >"$tmp/c.json"
check "convert --json" "$PY" -c '
import json, os, sys
j = json.load(open(sys.argv[1]))
assert j["output"] == sys.argv[2] and j["bytes"] == os.path.getsize(sys.argv[2]), j
assert j["tensors"] == 20 and j["dtype"] == "auto" and j["dtypes"] == {"f32": 20}, j
assert j["tokenizer"] == {"kind": "hf", "vocab_size": 2048} and j["seconds"] >= 0 and j["nonfinite_tensors"] == [], j' \
  "$tmp/c.json" "$tmp/ts.thin"
"$T" -q verify --json "$tmp/ts.thin" >"$tmp/v.json"
check "verify --json" "$PY" -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["ok"] is True and [c["name"] for c in j["checks"]] == ["open", "spec", "weights", "checksums", "tokenizer"], j
assert all(c["ok"] for c in j["checks"]), j' "$tmp/v.json"
fails_with "verify --json on a missing file" "error: .*nope.thin" "$T" verify --json "$tmp/nope.thin"
check "verify --json failure still prints JSON" "$PY" -c '
import json, sys; j = json.load(open(sys.argv[1])); assert j["ok"] is False and j["checks"][0]["ok"] is False, j' "$tmp/o"
finish
