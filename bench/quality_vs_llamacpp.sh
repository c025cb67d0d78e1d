#!/usr/bin/env bash
# Quality of ThinTensor's quantized profiles beside llama.cpp's quantized GGUFs of the same
# checkpoint, on the same token ids (issue #19): both against one base of full-precision logits.
#
# usage: bench/quality_vs_llamacpp.sh CKPT LLAMA_DIR OUT_DIR
#   CKPT       a Llama-architecture Hugging Face folder (config.json, model*.safetensors; bf16 or
#              f32), with a reference.safetensors (../shared's format) when one exists
#   LLAMA_DIR  the anchors' llama.cpp source (lltrim/), built in LLAMA_DIR/build with at least
#              libllama and llama-quantize (../shared/anchors/README.md)
#   env: TT (thintensor binary, default build/thintensor), N_SEQ (8), SEQ_LEN (512), TYPES
#        ("Q8_0 Q4_0 Q4_K_M"), THREADS (all cores), PY (a python3 with numpy, default /usr/bin/python3),
#        CONVERT_ARGS (more `thintensor convert` flags, e.g. --tokenizer tok512.bin for stories260K)
#
# 1. Token ids: N_SEQ sequences of SEQ_LEN, each stories the f32 model samples from BOS at
#    temperature 1 with no truncation (top-k 0, top-p 1, min-p 0): text from the model's own
#    distribution, joined BOS story EOS BOS story ...
# 2. The base: llama.cpp's logits of the f32 GGUF (bench/llama_gguf.py) with an f32 KV cache and
#    no flash attention over those ids, through bench/anchors/llama_logits.cpp; checked first
#    against transformers' logits on the checkpoint's reference
#    prompt, so the base is the checkpoint's. ThinTensor's f32 archive against it is the floor.
# 3. ThinTensor: `validate --reference` of each sequence's base under each profile (the CPU
#    reference, which the CUDA backend matches: tests/gpu/quant.sh). llama.cpp: each
#    `llama-quantize` type's logits through llama_logits with its default f16 KV cache (and the
#    f32 GGUF with it, the cache's own share), scored by bench/quality_summary.py
#    exactly as validate scores (src/runtime/compare.cpp).
# Results: OUT_DIR/summary.json, the ids, llama.cpp's logs and a table on stdout.
set -euo pipefail
[ $# -eq 3 ] || { sed -n "2,/^set -euo/p" "$0" | sed "\$d"; exit 2; }
ckpt=$(cd "$1" && pwd); ll=$(cd "$2" && pwd); out=$3
root=$(cd "$(dirname "$0")/.." && pwd)
TT=${TT:-$root/build/thintensor}; PY=${PY:-/usr/bin/python3}
N_SEQ=${N_SEQ:-8}; SEQ_LEN=${SEQ_LEN:-512}; TYPES=${TYPES:-Q8_0 Q4_0 Q4_K_M}; THREADS=${THREADS:-$(nproc)}
mkdir -p "$out"; out=$(cd "$out" && pwd)
w=$(mktemp -d); trap 'rm -rf "$w"' EXIT  # archives, GGUFs and logits (tens of MB): not kept
log() { echo "[$(date -u +%T)] $*" >&2; }
vocab=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['vocab_size'])" "$ckpt/config.json")

log "archive and GGUF of $ckpt"
$TT -q convert "$ckpt" -o "$w/f32.thin" --dtype f32 ${CONVERT_ARGS:-}
PYTHONPATH=$ll/gguf-py $PY "$root/bench/llama_gguf.py" "$ckpt" "$w/f32.gguf"
for t in $TYPES; do "$ll/build/bin/llama-quantize" "$w/f32.gguf" "$w/$t.gguf" "$t" >"$out/quantize-$t.log" 2>&1; done
ls -l "$w"/*.gguf "$w/f32.thin" | awk '{print $5, $9}' | sed "s|$w/||" >"$out/files.txt"

log "llama_logits against $ll"
libs=$(find "$ll/build" -name 'libllama.a' -o -name 'libggml*.a' | sort)
extra=(); ls "$ll"/build/ggml/src/ggml-cuda/*.a >/dev/null 2>&1 && extra=(-L/usr/local/cuda/lib64 -lcudart -lcublas -lcuda)
g++ -O2 -std=c++17 -I"$ll/include" -I"$ll/ggml/include" "$root/bench/anchors/llama_logits.cpp" -o "$w/llama_logits" \
  -Wl,--start-group $libs -Wl,--end-group -fopenmp -lpthread -ldl "${extra[@]}"

log "$N_SEQ sequences of $SEQ_LEN sampled ids"
$PY - "$TT" "$w/f32.thin" "$N_SEQ" "$SEQ_LEN" "$w/ids.txt" "$ckpt/config.json" <<'PYEOF'
import json, subprocess, sys
tt, arc, n_seq, seq_len, out, cfg = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], json.load(open(sys.argv[6]))
bos, eos = cfg.get("bos_token_id", 1), cfg.get("eos_token_id", 2)
seed = 1
with open(out, "w") as f:
    for _ in range(n_seq):
        ids = []
        while len(ids) < seq_len:
            r = json.loads(subprocess.run([tt, "-q", "run", arc, "--device", "cpu", "--temperature", "1", "--top-k", "0", "--top-p", "1",
                                           "--min-p", "0", "--seed", str(seed), "-n", str(seq_len), "--json"],
                                          check=True, capture_output=True, text=True).stdout)
            seed += 1
            ids += [bos] + r["tokens"] + [eos]
        f.write(" ".join(map(str, ids[:seq_len])) + "\n")
PYEOF

cp "$w/ids.txt" "$out/ids.txt"

log "the base: llama.cpp f32"
"$w/llama_logits" "$w/f32.gguf" "$w/ids.txt" "$w/base.f32" "$THREADS" 0 f32 2>"$out/llama_logits-base.log"
mkdir -p "$w/refs"; $PY "$root/bench/quality_summary.py" refs "$w/ids.txt" "$w/base.f32" "$vocab" "$w/refs"
agree=null
if [ -f "$ckpt/reference.safetensors" ]; then
  $PY -c "
import sys; sys.path.insert(0, '$root/bench'); import quality_summary as q
print(' '.join(map(str, q.read_safetensors('$ckpt/reference.safetensors')['input_ids'].tolist())))" >"$w/ref_ids.txt"
  "$w/llama_logits" "$w/f32.gguf" "$w/ref_ids.txt" "$w/ref.f32" "$THREADS" 0 f32 2>/dev/null
  agree=$($PY "$root/bench/quality_summary.py" agree "$ckpt/reference.safetensors" "$w/ref.f32")
  log "llama.cpp f32 against transformers on the reference prompt: $agree"
fi

rows=()
for p in balanced max-performance "max-performance --kv-cache int8" "max-max-perf --kv-cache float" max-max-perf; do
  log "ThinTensor $p"
  for k in $(seq 0 $((N_SEQ - 1))); do
    # (validate exits 1 when a bound fails; the figures are what is wanted here, bounds or not)
    $TT -q validate "$w/f32.thin" --reference "$w/refs/seq$k.safetensors" --device cpu --threads "$THREADS" --profile $p \
      --no-greedy --json >"$w/tt-$k.json" 2>"$w/tt-$k.err" || true
  done
  rows+=("$($PY - "$p" "$w" "$N_SEQ" <<'PYEOF'
import json, sys
p, w, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    rs = [json.load(open(f"{w}/tt-{k}.json")) for k in range(n)]
except ValueError:  # validate refused the profile (e.g. INT4 on rows no group divides): say why
    print(json.dumps({"engine": "ThinTensor", "weights": p, "refused": open(f"{w}/tt-0.err").read().strip()}))
    sys.exit(0)
pos = sum(r["positions"] for r in rs)
wavg = lambda key: sum(r[key] * r["positions"] for r in rs) / pos
print(json.dumps({"engine": "ThinTensor", "weights": p, "kv_cache": rs[0]["kv_cache"], "positions": pos,
                  "min_cosine": min(r["min_cosine"] for r in rs), "mean_kl": wavg("mean_kl"), "max_kl": max(r["max_kl"] for r in rs),
                  "top1_agreement": wavg("top1_agreement"), "top5_agreement": wavg("top5_agreement")}))
PYEOF
)")
done
for t in f32 $TYPES; do
  log "llama.cpp $t"
  "$w/llama_logits" "$w/$t.gguf" "$w/ids.txt" "$w/$t.f32" "$THREADS" 0 f16 2>"$out/llama_logits-$t.log"; got=$w/$t.f32
  s=$($PY "$root/bench/quality_summary.py" score "$w/ids.txt" "$w/base.f32" "$got" "$vocab")
  rows+=("$($PY -c "import json,sys; d=json.loads(sys.argv[1]); d.update(engine='llama.cpp', weights=sys.argv[2], kv_cache='f16'); print(json.dumps(d))" "$s" "$t")")
done

$PY - "$out/summary.json" "$agree" "${rows[@]}" <<'PYEOF'
import json, sys
rows = [json.loads(r) for r in sys.argv[3:]]
json.dump({"reference_agreement": json.loads(sys.argv[2]), "rows": rows}, open(sys.argv[1], "w"), indent=1)
print(f"| engine | weights | KV cache | positions | mean KL | max KL | top-1 | top-5 | min cosine |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|")
for r in rows:
    if "refused" in r:
        print(f"| {r['engine']} | {r['weights']} | – | – | refused: {r['refused']} | | | | |")
        continue
    print(f"| {r['engine']} | {r['weights']} | {r['kv_cache']} | {r['positions']} | {r['mean_kl']:.3e} | {r['max_kl']:.3e} | "
          f"{100 * r['top1_agreement']:.2f}% | {100 * r['top5_agreement']:.2f}% | {r['min_cosine']:.6f} |")
PYEOF
