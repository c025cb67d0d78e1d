#!/usr/bin/env bash
# Seeds the tokenizer fuzzer (corpus dir $1) with the real tokenizers of ../shared/tokenizers as
# tokenizer.json inputs (the target's selector byte 3, then the JSON). Not copied into the
# repository: extracted at run time. Each keeps its real normalizer, pre-tokenizer, decoder,
# post-processor and added tokens, with the BPE model cut to its first 4000 ids and the merges
# among them: the pipeline is what is worth mutating, and a 30 MB vocabulary would make every
# run parse 30 MB (a few runs a second under ASan). Also seeded: a normalizer that doubles the
# text 30 times, so that mutations start at the normalized-length bound (pipeline.h).
set -euo pipefail
corpus="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
shared="${TT_SHARED_DIR:-$root/../shared}"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
found=0
for xz in "$shared"/tokenizers/*/tokenizer.json.xz; do
  [ -f "$xz" ] || continue
  name=$(basename "$(dirname "$xz")")
  xz -dc "$xz" | "$PY" -c '
import json, sys
keep = 4000
tj = json.load(sys.stdin)
m = tj["model"]
vocab = {t: i for t, i in m["vocab"].items() if i < keep}
merges = []
for mg in m.get("merges", []):
    a, b = mg.split(" ", 1) if isinstance(mg, str) else mg
    if a in vocab and b in vocab and a + b in vocab:
        merges.append(mg)
m["vocab"], m["merges"] = vocab, merges
tj["added_tokens"] = tj.get("added_tokens", [])[:32]
sys.stdout.buffer.write(b"\x03" + json.dumps(tj, ensure_ascii=False).encode())
' > "$corpus/real_$name"
  found=$((found + 1))
done
[ "$found" -gt 0 ] || { echo "seed_fuzz_tokenizer.sh: no tokenizers in $shared/tokenizers" >&2; exit 1; }
"$PY" -c '
import json, sys
reps = [{"type": "Replace", "pattern": {"String": "l"}, "content": "ll"}] * 30
tj = {"normalizer": {"type": "Sequence", "normalizers": reps},
      "model": {"type": "BPE", "vocab": {"H": 0, "e": 1, "l": 2, "o": 3, " ": 4}, "merges": []}}
sys.stdout.buffer.write(b"\x03" + json.dumps(tj).encode())
' > "$corpus/doubling_normalizer"
