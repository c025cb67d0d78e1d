#!/usr/bin/env bash
# Seeds the archive fuzz corpus (dir $1) with real .thin files converted from ../shared fixtures.
# The fuzz build's own binaries are instrumented libraries only, so this uses a normal build's
# thintensor: $THINTENSOR, else build/thintensor (the README's build command makes it).
set -euo pipefail
corpus="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
shared="${TT_SHARED_DIR:-$root/../shared}"
bin="${THINTENSOR:-$root/build/thintensor}"
if [ ! -x "$bin" ]; then
  echo "seed_fuzz_archive.sh: no thintensor binary at $bin (build it first, or set THINTENSOR)" >&2
  exit 1
fi
"$bin" -q convert "$shared/fixtures/hf-tiny/qwen2" --dtype bf16 --out "$corpus/seed_qwen2_bf16.thin"
"$bin" -q convert "$shared/fixtures/hf-tiny/gemma3_text" --dtype f16 --out "$corpus/seed_gemma3_f16.thin"
# Format version 2: quantized tensors and their scales tensors (docs/FORMAT.md).
"$bin" -q convert "$shared/fixtures/hf-tiny/qwen2" --dtype bf16 --quant int4 --out "$corpus/seed_qwen2_int4.thin"
"$bin" -q convert "$shared/fixtures/hf-tiny/llama" --dtype bf16 --quant int8 --out "$corpus/seed_llama_int8.thin"
"$bin" -q convert "$shared/models/stories260K/hf" --dtype bf16 \
  --tokenizer "$shared/models/stories260K/tok512.bin" --out "$corpus/seed_stories260K.thin"
# A small hand-made archive (3 data pages: two tensors in two blocks and one embedded file) with
# the qwen2 seed's spec: mutations of its metadata run ~30x faster than of a converted model. Its
# checksums are zero; the fuzz target re-seals the metadata checksum, which is what lets it in.
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
"$PY" - "$corpus/seed_qwen2_bf16.thin" "$corpus/seed_small.thin" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
meta_off, meta_size = struct.unpack_from("<QQ", raw, 32)
spec = json.loads(raw[meta_off:meta_off + meta_size])["spec"]
z = "0" * 16
meta = {"format": "thintensor", "format_version": 1, "spec": spec, "generation": {},
        "tokenizer": {"kind": "hf"}, "provenance": {},
        "tensors": [{"name": "token_embd.weight", "dtype": "bf16", "shape": [4, 4], "offset": 4096,
                     "nbytes": 32, "xxh3": z, "block": "embed"},
                    {"name": "blk.0.attn_norm.weight", "dtype": "f32", "shape": [8], "offset": 8192,
                     "nbytes": 32, "xxh3": z, "block": "layer.0"}],
        "blocks": [{"name": "embed", "offset": 4096, "nbytes": 32}, {"name": "layer.0", "offset": 8192, "nbytes": 32}],
        "files": [{"name": "tokenizer.json", "offset": 12288, "nbytes": 2, "xxh3": z}]}
text = json.dumps(meta, separators=(",", ":")).encode()
data = bytearray(3 * 4096)
data[12288 - 4096:12288 - 4096 + 2] = b"{}"
size = 4096 + len(data) + len(text)
header = b"THINTNSR" + struct.pack("<IIQQQQQQ", 1, 4096, 4096, len(data), 4096 + len(data), len(text), 0, size)
open(sys.argv[2], "wb").write(header + bytes(4096 - len(header)) + bytes(data) + text)
PY
