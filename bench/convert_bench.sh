#!/usr/bin/env bash
# Conversion throughput against its roofline (../shared/STYLE.md habit 12). Writes a synthetic
# Llama-shaped bf16 checkpoint of about SIZE_GB (default 4) as 4 shards + model.safetensors.index.json
# (Python stdlib generator: random normal weights, realistic bf16 bit patterns), then times
#   - the roofline: `cat` of the shards (read), `cp` of the shards + fsync (read + write the same
#     bytes), with the page cache warm and cold;
#   - `thintensor convert` --dtype auto (a copy + xxh3 per tensor) warm and cold, and a cast
#     (bf16 -> f16, element by element) warm;
#   - optionally (BENCH_F32=1, the default) an f32 checkpoint of the same byte size cast to bf16.
# GB/s are source bytes / wall seconds (1 GB = 1e9 bytes); GB/cpu-s are source bytes / (user + sys)
# CPU seconds, the figure that stays meaningful when the machine's cores are shared and busy. Cold runs evict the source files from
# the page cache with posix_fadvise(DONTNEED) (no root needed). Everything is deleted on exit.
#
# Usage: bench/convert_bench.sh [SIZE_GB]   env: REPS (runs per figure, best kept; 2), THINTENSOR (default build/thintensor),
#        BENCH_DIR (parent of the temp dir, default the repository's parent, i.e. /work here)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
size_gb="${1:-4}"
bin="${THINTENSOR:-$root/build/thintensor}"
parent="${BENCH_DIR:-$(dirname "$root")}"
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3
[ -x /usr/bin/time ] || { echo "convert_bench: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
[ -x "$bin" ] || { echo "convert_bench: no thintensor at $bin (build first or set THINTENSOR)" >&2; exit 1; }

# Source + archive + copy, twice over for the f32 variant, with headroom.
need_kb=$(awk -v g="$size_gb" 'BEGIN {printf "%d", g * 1000000 * 5}')
free_kb=$(df -Pk "$parent" | awk 'NR==2 {print $4}')
if [ "$free_kb" -lt "$need_kb" ]; then
  echo "convert_bench: $parent has $((free_kb / 1000000)) GB free, need $((need_kb / 1000000)) GB" >&2
  exit 1
fi
work="$(mktemp -d "$parent/tt-convert-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT

gen() {  # gen DIR DTYPE(BF16|F32) SIZE_GB
  "$PY" - "$@" <<'EOF'
import array, json, os, random, struct, sys
out, dtype, size_gb = sys.argv[1], sys.argv[2], float(sys.argv[3])
esize = 2 if dtype == "BF16" else 4
# Llama shapes: hidden 3072, 24 heads of 128, 8 KV heads, ffn 8192, vocab 32000, untied head.
h, kv, f, v = 3072, 1024, 8192, 32000
per_layer = [("input_layernorm.weight", [h]), ("self_attn.q_proj.weight", [h, h]),
             ("self_attn.k_proj.weight", [kv, h]), ("self_attn.v_proj.weight", [kv, h]),
             ("self_attn.o_proj.weight", [h, h]), ("post_attention_layernorm.weight", [h]),
             ("mlp.gate_proj.weight", [f, h]), ("mlp.up_proj.weight", [f, h]), ("mlp.down_proj.weight", [h, f])]
numel = lambda s: s[0] * (s[1] if len(s) > 1 else 1)
layer_bytes = sum(numel(s) for _, s in per_layer) * esize
fixed = (2 * v * h + h) * esize
n_layers = max(1, round((size_gb * 1e9 - fixed) / layer_bytes))
tensors = [("model.embed_tokens.weight", [v, h])]
for i in range(n_layers):
    tensors += [("model.layers.%d.%s" % (i, n), s) for n, s in per_layer]
tensors += [("model.norm.weight", [h]), ("lm_head.weight", [v, h])]
# One 16 MiB block of N(0, 0.02) weights, cycled with a per-tensor shift: random-ish, cheap to write.
rng = random.Random(1234)
block = array.array("f", (rng.gauss(0.0, 0.02) for _ in range(4 << 20))).tobytes()
if dtype == "BF16":  # the upper half of each f32, rounded to nearest even
    a = array.array("I"); a.frombytes(block)
    block = array.array("H", (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF for u in a)).tobytes()
total = sum(numel(s) for _, s in tensors) * esize
n_shards, shards, cur, cur_bytes = 4, [], [], 0
for t in tensors:
    cur.append(t); cur_bytes += numel(t[1]) * esize
    if cur_bytes >= total / n_shards and len(shards) < n_shards - 1:
        shards.append(cur); cur, cur_bytes = [], 0
shards.append(cur)
os.makedirs(out, exist_ok=True)
weight_map = {}
for si, group in enumerate(shards):
    name = "model-%05d-of-%05d.safetensors" % (si + 1, len(shards))
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for n, s in group:
        nb = numel(s) * esize
        header[n] = {"dtype": dtype, "shape": s, "data_offsets": [off, off + nb]}
        off += nb; weight_map[n] = name
    text = json.dumps(header).encode(); text += b" " * (-len(text) % 8)
    with open(os.path.join(out, name), "wb", buffering=0) as fo:
        fo.write(struct.pack("<Q", len(text)) + text)
        for ti, (n, s) in enumerate(group):
            nb, pos = numel(s) * esize, (ti * 4096 * 7) % len(block)
            while nb > 0:
                chunk = block[pos:pos + nb]; fo.write(chunk); nb -= len(chunk); pos = 0
json.dump({"metadata": {"total_size": total}, "weight_map": weight_map},
          open(os.path.join(out, "model.safetensors.index.json"), "w"))
json.dump({"architectures": ["LlamaForCausalLM"], "hidden_size": h, "intermediate_size": f,
           "num_attention_heads": 24, "num_key_value_heads": 8, "num_hidden_layers": n_layers,
           "vocab_size": v, "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
           "tie_word_embeddings": False, "bos_token_id": 1, "eos_token_id": 2},
          open(os.path.join(out, "config.json"), "w"))
print("%s: %d layers, %d tensors, %.3f GB of %s weights in %d shards" % (out, n_layers, len(tensors), total / 1e9, dtype, len(shards)))
EOF
}

evict() {  # drop files from the page cache (clean pages; dirty ones are synced first)
  sync
  "$PY" -c 'import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$@"
}

now() { date +%s.%N; }
src_bytes() { stat -c %s "$1"/*.safetensors | awk '{s += $1} END {print s}'; }
report() {  # report LABEL BYTES WALL_SECONDS [CPU_SECONDS]
  awk -v l="$1" -v b="$2" -v s="$3" -v c="${4:-}" 'BEGIN {
    line = sprintf("  %-44s %7.2f s  %6.2f GB/s", l, s, b / s / 1e9)
    if (c != "") line = line sprintf("   cpu %6.2f s  %6.2f GB/cpu-s", c, b / (c > 0.001 ? c : 0.001) / 1e9)
    print line }'
}
# timed LABEL BYTES PREP CMD...: runs PREP (shell code: "warm", "cold" or ":") then CMD, REPS times
# (default 2), and reports the fastest run's wall and CPU (user+sys, children included) rates.
# note: best-of-N because on a VM the first write into never-touched guest memory is several times
# slower than later ones, and other tenants' load comes and goes.
timed() {
  local label="$1" b="$2" prep="$3"; shift 3
  local best_wall="" best_cpu=""
  for _ in $(seq "${REPS:-2}"); do
    eval "$prep"
    /usr/bin/time -f "%e %U %S" -o "$work/time" "$@"
    read -r wall user sys <"$work/time"
    if [ -z "$best_wall" ] || awk -v a="$wall" -v b="$best_wall" 'BEGIN {exit !(a < b)}'; then
      best_wall="$wall"; best_cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}')
    fi
  done
  report "$label" "$b" "$best_wall" "$best_cpu"
}
# (commands, not functions: /usr/bin/time runs them.) cp_sync fsyncs each copied file, as convert
# fsyncs its output.
cp_sync=(sh -c 'mkdir -p "$2" && cp "$1"/*.safetensors "$2"/ && sync "$2"/*.safetensors' _)
convert=("$bin" -q convert)

echo "== convert_bench $(date -u +%Y-%m-%dT%H:%M:%SZ)  $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "$(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(df -PT "$parent" | awk 'NR==2 {print $2}') on $parent"
echo "-- generating"
t0=$(now); gen "$work/bf16" BF16 "$size_gb"; t1=$(now)
B=$(src_bytes "$work/bf16")
report "generator (python, for reference)" "$B" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')"
shards=("$work/bf16"/*.safetensors)

# Each run starts with its output deleted (so cp and convert both write into freed memory) and the
# source either in the page cache (warm) or evicted from it (cold).
warm() { rm -rf "$work/copy" "$work/out.thin"; cat "${shards[@]}" >/dev/null; }
cold() { rm -rf "$work/copy" "$work/out.thin"; evict "${shards[@]}"; }

echo "-- roofline (same bytes; best of ${REPS:-2})"
timed "cat shards > /dev/null (warm)" "$B" warm sh -c 'cat "$@" >/dev/null' _ "${shards[@]}"
timed "cat shards > /dev/null (cold)" "$B" cold sh -c 'cat "$@" >/dev/null' _ "${shards[@]}"
timed "cp shards + fsync (warm source)" "$B" warm "${cp_sync[@]}" "$work/bf16" "$work/copy"
timed "cp shards + fsync (cold source)" "$B" cold "${cp_sync[@]}" "$work/bf16" "$work/copy"
rm -rf "$work/copy"

echo "-- thintensor convert (includes xxh3 of every source file, per-tensor xxh3, fsync)"
timed "convert --dtype auto (warm)" "$B" warm "${convert[@]}" "$work/bf16" --out "$work/out.thin"
"$bin" -q verify "$work/out.thin" >/dev/null
timed "convert --dtype auto (cold)" "$B" cold "${convert[@]}" "$work/bf16" --out "$work/out.thin"
timed "convert --dtype f16 (bf16->f16 cast, warm)" "$B" warm "${convert[@]}" "$work/bf16" --out "$work/out.thin" --dtype f16
timed "verify of that archive (warm)" "$B" "cat \"$work/out.thin\" >/dev/null" sh -c '"$1" -q verify "$2" >/dev/null' _ "$bin" "$work/out.thin"
rm -rf "$work/bf16" "$work/out.thin"

if [ "${BENCH_F32:-1}" = 1 ]; then
  echo "-- f32 checkpoint of the same byte size, cast to bf16"
  gen "$work/f32" F32 "$size_gb" >/dev/null
  B32=$(src_bytes "$work/f32")
  shards=("$work/f32"/*.safetensors)
  timed "cp shards + fsync (warm source)" "$B32" warm "${cp_sync[@]}" "$work/f32" "$work/copy"
  rm -rf "$work/copy"
  timed "convert --dtype bf16 (f32->bf16, warm)" "$B32" warm "${convert[@]}" "$work/f32" --out "$work/out.thin" --dtype bf16
fi
