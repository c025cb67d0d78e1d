#!/usr/bin/env bash
# Issue #4's parity bar on the CPU backend: every f32 fixture converted with --dtype f32 matches
# transformers' logits (min cosine >= 0.99999, max |delta| <= 1e-3) and its greedy ids exactly;
# converted with --dtype bf16 it reaches min cosine >= 0.999 against logits_bf16, and follows the
# greedy ids up to a near-tie. The host decode path (--device host) is held to the same f32 bar,
# and in bf16 to the GPU's (tests/gpu/run.sh: its KV cache holds bf16, so the greedy ids are not
# checked).
set -euo pipefail
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
S="$TT_SHARED_DIR"
pass=0; failed=0
check() {  # name, command...
  local name=$1; shift
  if "$@" >"$tmp/out" 2>&1; then pass=$((pass+1)); else failed=$((failed+1)); echo "FAILED: $name"; cat "$tmp/out"; fi
}
for m in llama mistral qwen2 qwen3 phi3 gemma3_text qwen3_moe mixtral; do
  src="$S/fixtures/hf-tiny/$m"
  "$THINTENSOR" -q convert "$src" -o "$tmp/$m.f32.thin" --dtype f32
  check "$m f32" "$THINTENSOR" -q validate "$tmp/$m.f32.thin" --reference "$src/reference.safetensors" --device cpu \
        --min-cosine 0.99999 --max-abs-diff 1e-3
  "$THINTENSOR" -q convert "$src" -o "$tmp/$m.bf16.thin" --dtype bf16
  # note: greedy ids are those of the f32 model; a bf16 model of random weights may pick another
  # near-tie token, which passes as a near-tie (within twice the largest logit difference).
  check "$m bf16" "$THINTENSOR" -q validate "$tmp/$m.bf16.thin" --reference "$src/reference.safetensors" --device cpu \
        --key logits_bf16 --min-cosine 0.999
  check "$m f32 (host)" "$THINTENSOR" -q validate "$tmp/$m.f32.thin" --reference "$src/reference.safetensors" --device host \
        --min-cosine 0.99999 --max-abs-diff 1e-3
  check "$m bf16 (host)" "$THINTENSOR" -q validate "$tmp/$m.bf16.thin" --reference "$src/reference.safetensors" --device host \
        --key logits_bf16 --min-cosine 0.999 --no-greedy
done
# Qwen3.5 (Gated DeltaNet + gated attention; the MoE one with a gated shared expert): the CPU
# reference here (CUDA: tests/gpu/run.sh); the host decode path refuses it, naming the reason.
for m in qwen3_5_text qwen3_5_moe_text; do
  src="$S/fixtures/hf-tiny/$m"
  "$THINTENSOR" -q convert "$src" -o "$tmp/$m.f32.thin" --dtype f32
  check "$m f32" "$THINTENSOR" -q validate "$tmp/$m.f32.thin" --reference "$src/reference.safetensors" --device cpu \
        --min-cosine 0.99999 --max-abs-diff 1e-3
  "$THINTENSOR" -q convert "$src" -o "$tmp/$m.bf16.thin" --dtype bf16
  # note: the MoE fixture's bf16 weights move position 30 by themselves: its bf16 archive reaches
  # cosine 0.99805 there against logits_bf16 and 0.99809 against logits_f32, where the f32 archive
  # reaches 0.99997 against logits_bf16 (an expert choice near a tie, we take it), hence its bound.
  bound=0.999; [ "$m" = qwen3_5_moe_text ] && bound=0.998
  check "$m bf16" "$THINTENSOR" -q validate "$tmp/$m.bf16.thin" --reference "$src/reference.safetensors" --device cpu \
        --key logits_bf16 --min-cosine "$bound"
  if "$THINTENSOR" -q validate "$tmp/$m.f32.thin" --reference "$src/reference.safetensors" --device host >"$tmp/out" 2>&1; then
    echo "FAILED: $m --device host ran"; failed=$((failed+1))
  # note: "or cuda" only where the CUDA backend runs the model (cuda_unsupported_reason).
  elif ! grep -q "Gated DeltaNet linear-attention layers.*host decode path does not compute yet; use --device cpu" "$tmp/out"; then
    echo "FAILED: $m --device host: no message naming the reason"; cat "$tmp/out"; failed=$((failed+1))
  else pass=$((pass+1)); fi
done
# Gemma 4 (per-layer inputs, layer scalars, KV sharing in the last 2 layers, head_dim 32 on the
# full-attention layers, proportional partial RoPE, logit soft-cap): the CPU reference; the host
# decode path refuses it, naming the reason (the CUDA backend runs it: tests/gpu/fixtures.sh).
m=gemma4_text; src="$S/fixtures/hf-tiny/$m"
"$THINTENSOR" -q convert "$src" -o "$tmp/$m.f32.thin" --dtype f32
check "$m f32" "$THINTENSOR" -q validate "$tmp/$m.f32.thin" --reference "$src/reference.safetensors" --device cpu \
      --min-cosine 0.99999 --max-abs-diff 1e-3
"$THINTENSOR" -q convert "$src" -o "$tmp/$m.bf16.thin" --dtype bf16
# note: transformers' own bf16 run is far from its f32 one on this fixture (attention scaling 1 over
# q/k-normed heads makes the softmax sharp, so bf16 activations move it): the f32 archive reaches
# min cosine 0.98918 against logits_bf16; the bf16 archive 0.99064 against logits_bf16 and 0.99358
# against logits_f32. Hence 0.99 here, not 0.999.
check "$m bf16" "$THINTENSOR" -q validate "$tmp/$m.bf16.thin" --reference "$src/reference.safetensors" --device cpu \
      --key logits_bf16 --min-cosine 0.99
if "$THINTENSOR" -q validate "$tmp/$m.f32.thin" --reference "$src/reference.safetensors" --device host >"$tmp/out" 2>&1; then
  echo "FAILED: $m --device host ran"; failed=$((failed+1))
elif ! grep -q "Gemma4ForCausalLM has per-layer inputs, KV sharing and per-layer head sizes, which the host decode path does not compute yet; use --device cpu or cuda$" "$tmp/out"; then
  echo "FAILED: $m --device host: no message naming the reason"; cat "$tmp/out"; failed=$((failed+1))
else pass=$((pass+1)); fi
ts="$S/models/tinystories-656k"
"$THINTENSOR" -q convert "$ts" -o "$tmp/ts.thin" --dtype f32
# TinyStories' greedy_ids continue the whole 12-token prompt (the hf-tiny fixtures' the first 8):
# with default flags the prefix is inferred from the reference's own logits, and said.
check "tinystories f32 (defaults)" "$THINTENSOR" -q validate "$tmp/ts.thin" --reference "$ts/reference.safetensors" --device cpu
if ! grep -q "greedy ids equal *64/64 *ok (after input_ids\[:12\], inferred" "$tmp/out"; then
  echo "FAILED: tinystories: the greedy prefix 12 was not inferred"; cat "$tmp/out"; failed=$((failed+1)); fi
check "tinystories f32 --greedy-prefix 12" "$THINTENSOR" -q validate "$tmp/ts.thin" --reference "$ts/reference.safetensors" \
      --device cpu --min-cosine 0.99999 --max-abs-diff 1e-3 --greedy-prefix 12
check "tinystories f32 (host)" "$THINTENSOR" -q validate "$tmp/ts.thin" --reference "$ts/reference.safetensors" \
      --device host --min-cosine 0.99999 --max-abs-diff 1e-3 --greedy-prefix 12
# A wrong explicit prefix fails, and says at which greedy token and with what gap.
if "$THINTENSOR" -q validate "$tmp/ts.thin" --reference "$ts/reference.safetensors" --device cpu --greedy-prefix 8 >"$tmp/out" 2>&1; then
  echo "FAILED: tinystories --greedy-prefix 8 passed"; failed=$((failed+1))
elif ! grep -q "^FAIL: greedy token 0 (position 8, continuing input_ids\[:8\]) is .* the reference's is 85 (ThinTensor's logit of its token over the reference's: gap" "$tmp/out"; then
  echo "FAILED: tinystories --greedy-prefix 8: no message naming the greedy token"; cat "$tmp/out"; failed=$((failed+1))
else pass=$((pass+1)); fi
# NaN anywhere fails, naming the position (max |delta| used to print 0 and "ok" on NaN logits).
/usr/bin/python3 - "$ts/reference.safetensors" "$tmp/nan.safetensors" <<'PY'
import json, struct, sys
raw = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack_from("<Q", raw)[0]
h = json.loads(raw[8:8 + n])
t = h["logits_f32"]
vocab = t["shape"][1]
at = 8 + n + t["data_offsets"][0] + 4 * (5 * vocab + 3)  # position 5, token 3
raw[at:at + 4] = struct.pack("<f", float("nan"))
open(sys.argv[2], "wb").write(raw)
PY
set +e
"$THINTENSOR" -q validate "$tmp/ts.thin" --reference "$tmp/nan.safetensors" --device cpu >"$tmp/out" 2>&1; rc=$?
set -e
if [ "$rc" -ne 3 ] || ! grep -q "^FAIL: the reference's logits_f32 hold NaN at position 5 (token 3)" "$tmp/out" \
   || ! grep -q "^max |delta logit| .* FAIL (position 5)" "$tmp/out" || ! grep -q "^FAIL: 12 positions" "$tmp/out"; then
  echo "FAILED: NaN logits were not a FAIL naming position 5 (exit $rc)"; cat "$tmp/out"; failed=$((failed+1))
else pass=$((pass+1)); fi
# A NaN bound would compare false with everything and silently mean the default: a usage error.
set +e
"$THINTENSOR" -q validate "$tmp/ts.thin" --reference "$ts/reference.safetensors" --device cpu --min-cosine nan >"$tmp/out" 2>&1; rc=$?
set -e
if [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || ! grep -q -- "--min-cosine: must be a finite number in \\[0, 1\\], got nan" "$tmp/out"; then
  echo "FAILED: --min-cosine nan was not refused naming the flag (exit $rc)"; cat "$tmp/out"; failed=$((failed+1))
else pass=$((pass+1)); fi
# bf16 with the greedy check on: qwen3's bf16 run flips a near-tie of its f32 greedy ids (gap
# 0.0006, within twice the largest logit difference): accepted as --hf-model accepts it, shown.
check "qwen3 bf16 greedy" "$THINTENSOR" -q validate "$tmp/qwen3.bf16.thin" --reference "$S/fixtures/hf-tiny/qwen3/reference.safetensors" \
      --device cpu --key logits_bf16
if ! grep -q "greedy ids equal .* ok near-tie, gap" "$tmp/out"; then
  echo "FAILED: qwen3 bf16: no near-tie shown"; cat "$tmp/out"; failed=$((failed+1)); fi
s260="$S/models/stories260K/hf"
"$THINTENSOR" -q convert "$s260" -o "$tmp/s260.thin" --dtype f32 --tokenizer "$S/models/stories260K/tok512.bin"
check "stories260K f32" "$THINTENSOR" -q validate "$tmp/s260.thin" --reference "$s260/reference.safetensors" --device cpu \
      --min-cosine 0.99999 --max-abs-diff 1e-3
check "stories260K f32 (host)" "$THINTENSOR" -q validate "$tmp/s260.thin" --reference "$s260/reference.safetensors" --device host \
      --min-cosine 0.99999 --max-abs-diff 1e-3
"$THINTENSOR" -q convert "$s260" -o "$tmp/s260.bf16.thin" --dtype bf16 --tokenizer "$S/models/stories260K/tok512.bin"
check "stories260K bf16" "$THINTENSOR" -q validate "$tmp/s260.bf16.thin" --reference "$s260/reference.safetensors" --device cpu \
      --key logits_bf16 --min-cosine 0.999
check "stories260K bf16 (host)" "$THINTENSOR" -q validate "$tmp/s260.bf16.thin" --reference "$s260/reference.safetensors" --device host \
      --key logits_bf16 --min-cosine 0.999 --no-greedy
# A broken model must fail: scale one norm weight by editing the archive is covered in unit tests;
# here, the wrong reference (another model's logits) must fail.
if "$THINTENSOR" -q validate "$tmp/llama.f32.thin" --reference "$S/fixtures/hf-tiny/mistral/reference.safetensors" --device cpu >/dev/null 2>&1; then
  echo "FAILED: validate accepted another model's reference"; failed=$((failed+1))
else pass=$((pass+1)); fi
echo "$pass passed, $failed failed"
[ "$failed" -eq 0 ]
