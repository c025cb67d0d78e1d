#!/usr/bin/env bash
# stories260K against exact arithmetic. transformers' bos_greedy_ids follow the exact greedy path
# for 185 tokens; at the 186th the two best logits are 0.004 apart and the reference took the
# second (its own rounding). A float64 NumPy forward pass (llama_f64_reference.py, independent of
# ThinTensor and torch) settles it: ThinTensor must match it over all 186 positions to f32
# rounding, pick the same token there, and reproduce bos_greedy_ids up to that point.
set -uo pipefail
source "$TT_SOURCE_DIR/tests/e2e/lib/common.sh"
S="$TT_SHARED_DIR/models/stories260K"
PY=/usr/bin/python3
$PY -c 'import numpy' 2>/dev/null || { echo "python3-numpy (Debian) is required: apt-get install python3-numpy"; exit 1; }
$PY "$TT_SOURCE_DIR/tests/e2e/llama_f64_reference.py" "$S/hf" "$S/hf/bos_greedy.safetensors" bos_greedy_ids 186 "$tmp/f64.safetensors" >"$tmp/f64.json"
"$THINTENSOR" -q convert "$S/hf" -o "$tmp/s260.thin" --dtype f32 --tokenizer "$S/tok512.bin"
check "logits match float64 over 186 positions" "$THINTENSOR" -q validate "$tmp/s260.thin" --reference "$tmp/f64.safetensors" \
  --device cpu --min-cosine 0.99999 --max-abs-diff 1e-4 --no-greedy
"$THINTENSOR" -q validate "$tmp/s260.thin" --reference "$tmp/f64.safetensors" --device cpu --no-greedy --json >"$tmp/v.json"
check "top-1 agrees with float64 at every position" $PY -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["top1_agreement"] == 1.0 else 1)' "$tmp/v.json"
# Greedy generation: bos_greedy_ids up to the near-tie, then float64's choice.
"$THINTENSOR" -q run "$tmp/s260.thin" --temperature 0 --max-tokens 186 --device cpu >"$tmp/gen.txt"
check "generated text = transformers' first 185 tokens + float64's 186th" $PY - "$S/tok512.bin" "$S/hf/bos_greedy.safetensors" "$tmp/f64.safetensors" "$tmp/gen.txt" "$THINTENSOR" <<'PY'
import json, struct, subprocess, sys
def ids(path, key):
    b = open(path, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])[key]
    s, e = h["data_offsets"]; d = b[8 + n + s:8 + n + e]; return list(struct.unpack(f"<{len(d)//8}q", d))
ref = ids(sys.argv[2], "bos_greedy_ids"); exact = ids(sys.argv[3], "next_ids")
assert ref[1:186] == exact[:185], "the float64 path and transformers already part before token 186"
assert ref[186] != exact[185], "no near-tie at token 186 any more?"
want = ref[:186] + [exact[185]]
# Decode want[1:] with the model's own tokenizer through the CLI's JSONL mode is not possible
# (it encodes); compare tokens instead: re-encode the generated text and check the ids.
text = open(sys.argv[4], encoding="utf-8").read().rstrip("\n")
out = subprocess.run([sys.argv[5], "-q", "tokenize", sys.argv[1], "--text", text, "--json"], capture_output=True, text=True)
got = json.loads(out.stdout)["ids"]
sys.exit(0 if got == want else 1)
PY
finish
