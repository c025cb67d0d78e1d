#!/usr/bin/env bash
# Seeds the safetensors fuzz corpus (dir $1) with the real checkpoints of ../shared: one file per
# architecture, plus a minimal two-tensor file so mutations of the header are cheap to explore.
set -euo pipefail
corpus="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
shared="${TT_SHARED_DIR:-$root/../shared}"
for d in llama qwen2 qwen3 phi3 gemma3_text; do
  cp "$shared/fixtures/hf-tiny/$d/model.safetensors" "$corpus/seed_$d.safetensors"
done
cp "$shared/models/stories260K/hf/reference.safetensors" "$corpus/seed_reference.safetensors"
# Header {"__metadata__":{"format":"pt"},"a":{F32 [2,2]},"b":{BF16 [3]}} + 22 data bytes.
/usr/bin/python3 - "$corpus/seed_small.safetensors" <<'PY'
import json, struct, sys
h = json.dumps({"__metadata__": {"format": "pt"},
                "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
                "b": {"dtype": "BF16", "shape": [3], "data_offsets": [16, 22]}}).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + bytes(range(22)))
PY
