#!/usr/bin/env bash
# The CLI's contract for bad input to convert / inspect / verify: a non-zero exit, one
# "thintensor: error:" line on stderr naming the file at fault and the cause, and no output file
# (nor temporary file) left behind. Broken inputs are copies of ../shared fixtures with one thing
# broken, made in a temp dir that is removed on exit. Also checks the happy path the errors are
# measured against: convert + verify + inspect of a real model succeed.
set -euo pipefail
: "${THINTENSOR:?}" "${TT_SHARED_DIR:?}"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
passed=0 failed=0

ok() { passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

# expect_fail NAME OUTDIR NEEDLE... -- CMD...: CMD must exit non-zero, its stderr must contain every
# NEEDLE, and OUTDIR (when not "-") must be empty afterwards.
expect_fail() {
  local name="$1" outdir="$2"; shift 2
  local needles=()
  while [ "$1" != "--" ]; do needles+=("$1"); shift; done
  shift
  local rc=0
  "$@" >"$work/stdout" 2>"$work/stderr" || rc=$?
  local fine=1
  if [ "$rc" -eq 0 ]; then bad "$name: exited 0"; fine=0; fi
  for n in "${needles[@]}"; do
    if ! grep -qF -- "$n" "$work/stderr"; then bad "$name: stderr lacks '$n': $(cat "$work/stderr")"; fine=0; fi
  done
  if ! grep -q '^thintensor: error: ' "$work/stderr"; then bad "$name: no 'thintensor: error:' line"; fine=0; fi
  if [ "$outdir" != "-" ] && [ -n "$(ls -A "$outdir")" ]; then bad "$name: left $(ls -A "$outdir")"; fine=0; fi
  [ "$fine" -eq 1 ] && ok
  return 0
}

# fresh NAME FIXTURE: a writable copy of a fixture in $work/NAME, and an empty $work/NAME.out.
fresh() {
  rm -rf "$work/$1" "$work/$1.out"
  mkdir -p "$work/$1" "$work/$1.out"
  cp "$TT_SHARED_DIR/$2"/* "$work/$1/"
  chmod -R u+w "$work/$1"
}

# st_edit FILE PYTHON: rewrites a safetensors file; PYTHON edits `h` (header dict) and `data` (bytes).
st_edit() {
  "$PY" - "$1" "$2" <<'EOF'
import json, struct, sys
path, code = sys.argv[1], sys.argv[2]
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n]); data = raw[8 + n:]
exec(code)
t = json.dumps(h).encode()
open(path, "wb").write(struct.pack("<Q", len(t)) + t + data)
EOF
}

llama=fixtures/hf-tiny/llama

# --- the happy path ---------------------------------------------------------------------------
mkdir -p "$work/good"
if "$THINTENSOR" -q convert "$TT_SHARED_DIR/models/tinystories-656k" --out "$work/good/ts.thin" &&
   "$THINTENSOR" verify "$work/good/ts.thin" | grep -q ': OK (' &&
   "$THINTENSOR" inspect --json "$work/good/ts.thin" >"$work/good/ts.json" &&
   "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["spec"]["hf_architecture"]=="LlamaForCausalLM" and j["spec"]["tied_embeddings"] and j["tokenizer"]["kind"]=="hf", j' "$work/good/ts.json"; then
  ok
else
  bad "tinystories-656k: convert/verify/inspect"
fi
[ -z "$(ls "$work/good" | grep -v -e '^ts.thin$' -e '^ts.json$')" ] && ok || bad "convert left temp files: $(ls "$work/good")"

# --- convert: bad checkpoints -----------------------------------------------------------------
fresh noconfig "$llama"; rm "$work/noconfig/config.json"
expect_fail "missing config.json" "$work/noconfig.out" "$work/noconfig" "missing config.json" -- \
  "$THINTENSOR" convert "$work/noconfig" --out "$work/noconfig.out/m.thin"

fresh foo "$llama"; sed -i 's/"LlamaForCausalLM"/"FooForCausalLM"/' "$work/foo/config.json"
expect_fail "unsupported architecture" "$work/foo.out" "$work/foo/config.json" \
  "unsupported architecture 'FooForCausalLM'" LlamaForCausalLM MistralForCausalLM Qwen2ForCausalLM \
  Qwen3ForCausalLM Phi3ForCausalLM Gemma3ForCausalLM Qwen3MoeForCausalLM MixtralForCausalLM Gemma4ForCausalLM -- \
  "$THINTENSOR" convert "$work/foo" --out "$work/foo.out/m.thin"

fresh trunc "$llama"; truncate -s 200000 "$work/trunc/model.safetensors"
expect_fail "truncated safetensors" "$work/trunc.out" "$work/trunc/model.safetensors" "truncated" -- \
  "$THINTENSOR" convert "$work/trunc" --out "$work/trunc.out/m.thin"

fresh trunchdr "$llama"; truncate -s 1000 "$work/trunchdr/model.safetensors"
expect_fail "safetensors truncated in its header" "$work/trunchdr.out" "$work/trunchdr/model.safetensors" \
  "truncated safetensors file" -- "$THINTENSOR" convert "$work/trunchdr" --out "$work/trunchdr.out/m.thin"

fresh overrun "$llama"
st_edit "$work/overrun/model.safetensors" 'h["model.norm.weight"]["data_offsets"][1] += 4096'
expect_fail "offsets overrun the file" "$work/overrun.out" "$work/overrun/model.safetensors" \
  "'model.norm.weight'" "overrun" -- "$THINTENSOR" convert "$work/overrun" --out "$work/overrun.out/m.thin"

fresh missing "$llama"
st_edit "$work/missing/model.safetensors" 'del h["model.layers.1.self_attn.v_proj.weight"]'
expect_fail "missing tensor" "$work/missing.out" "$work/missing/model.safetensors" \
  "missing tensor 'model.layers.1.self_attn.v_proj.weight'" -- \
  "$THINTENSOR" convert "$work/missing" --out "$work/missing.out/m.thin"

fresh shape "$llama"
st_edit "$work/shape/model.safetensors" 'h["model.layers.0.mlp.down_proj.weight"]["shape"] = [160, 64]'
expect_fail "wrong shape" "$work/shape.out" "$work/shape/model.safetensors" \
  "'model.layers.0.mlp.down_proj.weight' has shape [160, 64] but config.json implies [64, 160]" -- \
  "$THINTENSOR" convert "$work/shape" --out "$work/shape.out/m.thin"

fresh shard "$llama"
mv "$work/shard/model.safetensors" "$work/shard/model-00001-of-00002.safetensors"
"$PY" - "$work/shard/model-00001-of-00002.safetensors" "$work/shard/model.safetensors.index.json" <<'EOF'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
names = [k for k in json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]]) if k != "__metadata__"]
wm = {n: "model-0000%d-of-00002.safetensors" % (1 + (i % 2)) for i, n in enumerate(names)}
json.dump({"metadata": {}, "weight_map": wm}, open(sys.argv[2], "w"))
EOF
expect_fail "index names a missing shard" "$work/shard.out" "$work/shard/model.safetensors.index.json" \
  "'model-00002-of-00002.safetensors'" "does not exist" -- \
  "$THINTENSOR" convert "$work/shard" --out "$work/shard.out/m.thin"

fresh dtype "$llama"
expect_fail "bad --dtype" "$work/dtype.out" "--dtype" "'int4'" -- \
  "$THINTENSOR" convert "$work/dtype" --dtype int4 --out "$work/dtype.out/m.thin"

# --- reading: damaged archives ----------------------------------------------------------------
arch="$work/good/ts.thin"
cp "$arch" "$work/short.thin"; truncate -s -4096 "$work/short.thin"
for cmd in verify inspect; do
  expect_fail "$cmd truncated archive" - "$work/short.thin" "truncated" -- "$THINTENSOR" "$cmd" "$work/short.thin"
done

cp "$arch" "$work/magic.thin"; printf 'NOTTHIN!' | dd of="$work/magic.thin" conv=notrunc status=none
expect_fail "bad magic" - "$work/magic.thin" "bad magic" -- "$THINTENSOR" verify "$work/magic.thin"
expect_fail "not an archive" - "$TT_SHARED_DIR/$llama/model.safetensors" "bad magic" -- \
  "$THINTENSOR" inspect "$TT_SHARED_DIR/$llama/model.safetensors"

# Flip one byte in the middle of blk.1.ffn_down.weight: the archive still opens (inspect works),
# verify fails naming the tensor.
cp "$arch" "$work/flip.thin"
"$PY" - "$work/good/ts.json" "$work/flip.thin" <<'EOF'
import json, struct, sys
path = sys.argv[2]
raw = bytearray(open(path, "rb").read())
meta_off, meta_size = struct.unpack_from("<QQ", raw, 32)
meta = json.loads(raw[meta_off:meta_off + meta_size])
t = next(t for t in meta["tensors"] if t["name"] == "blk.1.ffn_down.weight")
raw[t["offset"] + t["nbytes"] // 2] ^= 0x04
open(path, "wb").write(raw)
EOF
if "$THINTENSOR" inspect "$work/flip.thin" >/dev/null 2>&1; then ok; else bad "inspect refused an archive with a flipped data byte"; fi
expect_fail "flipped data byte" - "$work/flip.thin" "tensor 'blk.1.ffn_down.weight' is corrupt" -- \
  "$THINTENSOR" verify "$work/flip.thin"

expect_fail "missing archive" - "$work/nope.thin" -- "$THINTENSOR" verify "$work/nope.thin"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
