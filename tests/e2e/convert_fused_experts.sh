#!/usr/bin/env bash
# Mixture-of-experts checkpoints whose experts are stored fused (transformers v5's 3-D
# mlp.experts.gate_up_proj / down_proj, as Qwen3.5-MoE publishes them): a fused copy of each MoE
# fixture (make_fused_experts.py restacks its per-expert tensors, bytes untouched) converts to the
# same tensors as the fixture itself, and passes `validate --reference` against the fixture's
# transformers logits with validate_fixtures.sh's bounds. A wrong-shaped fused tensor fails naming
# the tensor and the shape expected, with a non-zero exit and no output file.
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
make_fused="$(dirname "$0")/make_fused_experts.py"

# tensors ARCHIVE: name, shape, offset and checksum of every tensor, one a line.
tensors() {
  "$THINTENSOR" inspect --json --tensors "$1" |
    "$PY" -c 'import json,sys; [print(t["name"], t["shape"], t["offset"], t["xxh3"]) for t in json.load(sys.stdin)["tensors"]]'
}

for m in qwen3_moe mixtral qwen3_5_moe_text; do
  src="$S/fixtures/hf-tiny/$m" fused="$tmp/$m.fused"
  "$PY" "$make_fused" "$src" "$fused"
  check "$m: the copy is fused" grep -q '"model.layers.1.mlp.experts.gate_up_proj"' "$fused/model.safetensors"
  for dtype in f32 bf16; do
    "$THINTENSOR" -q convert "$src" -o "$tmp/$m.$dtype.thin" --dtype "$dtype"
    "$THINTENSOR" -q convert "$fused" -o "$tmp/$m.fused.$dtype.thin" --dtype "$dtype"
    check "$m $dtype: fused and per-expert archives hold the same tensors" \
      cmp -s <(tensors "$tmp/$m.$dtype.thin") <(tensors "$tmp/$m.fused.$dtype.thin")
  done
  check "$m f32 fused: validate" "$THINTENSOR" -q validate "$tmp/$m.fused.f32.thin" --reference "$src/reference.safetensors" \
    --device cpu --min-cosine 0.99999 --max-abs-diff 1e-3
  # note: validate_fixtures.sh's bf16 bounds (qwen3_5_moe_text's bf16 weights move one expert choice).
  bound=0.999; [ "$m" = qwen3_5_moe_text ] && bound=0.998
  check "$m bf16 fused: validate" "$THINTENSOR" -q validate "$tmp/$m.fused.bf16.thin" --reference "$src/reference.safetensors" \
    --device cpu --key logits_bf16 --min-cosine "$bound"
done

# Layer 1's down_proj under the shape of a transposed layout, [n_experts, ffn, hidden].
"$PY" "$make_fused" "$S/fixtures/hf-tiny/qwen3_moe" "$tmp/broken" --break-down
mkdir "$tmp/broken.out"
fails_with "wrong-shaped fused down_proj" \
  "$tmp/broken/model.safetensors: tensor 'model.layers.1.mlp.experts.down_proj' has shape \[8, 32, 64\] but config.json implies \[8, 64, 32\] \(\[n_experts, hidden, expert_ffn\]" \
  "$THINTENSOR" convert "$tmp/broken" -o "$tmp/broken.out/m.thin"
check "wrong-shaped fused down_proj: no output left" [ -z "$(ls -A "$tmp/broken.out")" ]
finish
