#!/usr/bin/env bash
# The 8-bit KV cache (--kv-cache int8, runtime/kv_cache_type.h) through the CLI: validate passes
# its bounds (runtime/parity.h) against the f32 logits of TinyStories-656K and of the hf-tiny
# fixtures on the CPU reference and the host path, alone and beside each quantized profile; the
# two backends' reports agree and so do their greedy texts. It is max-max-perf's default
# (--kv-cache auto; float opts out), and the reports say which cache ran. The GPU planner counts
# its bytes and puts layers on the CPU beside it; on a head_dim CUDA's cache cannot hold (8 here),
# `plan` refuses an explicit int8 naming the layer and warns that the profile's falls back.
set -uo pipefail
source "$TT_SOURCE_DIR/tests/e2e/lib/common.sh"
TT="$THINTENSOR"
ts="$S/models/tinystories-656k"
"$TT" -q convert "$ts" -o "$tmp/ts.thin" --dtype f32
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
close() { python3 -c "import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:3]); sys.exit(0 if abs(a['min_cosine']-b['min_cosine'])<=1e-6 and abs(a['mean_kl']-b['mean_kl'])<=1e-3*a['mean_kl']+1e-12 else 1)" "$1" "$2"; }

for p in balanced max-performance max-max-perf; do
  for dev in cpu host; do
    check "tinystories $p, $dev, 8-bit KV cache: validate passes" \
      "$TT" -q validate "$tmp/ts.thin" --reference "$ts/reference.safetensors" --device $dev --profile $p --kv-cache int8 \
        --report "$tmp/$p.$dev.json"
  done
  check "tinystories $p: cpu and host reports agree" close "$tmp/$p.cpu.json" "$tmp/$p.host.json"
done
check "the report names the 8-bit cache" grep -q '8-bit KV cache' "$tmp/balanced.host.json"
check "balanced + int8 KV: held to 0.9995 / 1e-3" [ "$(python3 -c "import json; t=json.load(open('$tmp/balanced.cpu.json'))['thresholds']; print(t['min_cosine'], t['max_mean_kl'])")" = "0.9995 0.001" ]
# Without the flag the strict f32 bounds stand, and the 8-bit cache would miss them: it is not a no-op.
"$TT" -q validate "$tmp/ts.thin" --reference "$ts/reference.safetensors" --device cpu --report "$tmp/f32.json" >/dev/null 2>&1
check "the 8-bit cache moves the logits" python3 -c "import json; a=json.load(open('$tmp/f32.json')); b=json.load(open('$tmp/balanced.cpu.json')); assert b['max_abs_diff'] > 100 * a['max_abs_diff'], (a['max_abs_diff'], b['max_abs_diff'])"

for m in llama qwen2 qwen3 gemma3_text qwen3_moe; do
  "$TT" -q convert "$S/fixtures/hf-tiny/$m" -o "$tmp/$m.thin" --dtype f32 2>/dev/null
  for dev in cpu host; do
    check "$m, $dev, 8-bit KV cache: validate passes" \
      "$TT" -q validate "$tmp/$m.thin" --reference "$S/fixtures/hf-tiny/$m/reference.safetensors" --device $dev --kv-cache int8
  done
done
# Gemma 4's fixture: attention scale 1 over q/k-normed heads makes its softmax sharp (measured
# min cosine 0.9944, docs/QUANTIZATION.md): the CPU reference (no host path for it) at 0.99.
"$TT" -q convert "$S/fixtures/hf-tiny/gemma4_text" -o "$tmp/g4.thin" --dtype f32 2>/dev/null
check "gemma4_text, cpu, 8-bit KV cache, min cosine 0.99" \
  "$TT" -q validate "$tmp/g4.thin" --reference "$S/fixtures/hf-tiny/gemma4_text/reference.safetensors" --device cpu --kv-cache int8 \
    --min-cosine 0.99

"$TT" -q run "$tmp/ts.thin" --device cpu --kv-cache int8 --temperature 0 --max-tokens 200 -p "Once upon a time" >"$tmp/t.cpu" 2>/dev/null
"$TT" -q run "$tmp/ts.thin" --device host --kv-cache int8 --temperature 0 --max-tokens 200 -p "Once upon a time" >"$tmp/t.host" 2>/dev/null
check "greedy text: host equals cpu over 200 tokens" cmp -s "$tmp/t.cpu" "$tmp/t.host"
check "greedy text is not empty" [ -s "$tmp/t.cpu" ]

# max-max-perf stores the 8-bit cache unless --kv-cache float says otherwise: its report is the
# explicit int8 run's to the last digit, names the cache, and the float cache's differs.
"$TT" -q validate "$tmp/ts.thin" --reference "$ts/reference.safetensors" --device cpu --profile max-max-perf \
  --report "$tmp/q4.auto.json" >/dev/null 2>&1
"$TT" -q validate "$tmp/ts.thin" --reference "$ts/reference.safetensors" --device cpu --profile max-max-perf --kv-cache float \
  --report "$tmp/q4.float.json" >/dev/null 2>&1
metrics() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(j['kv_cache'], j['min_cosine'], j['mean_kl'], j['max_abs_diff'])" "$1"; }
check "max-max-perf: the 8-bit cache by default (the report is --kv-cache int8's)" \
  [ "$(metrics "$tmp/q4.auto.json")" = "$(metrics "$tmp/max-max-perf.cpu.json")" ]
check "max-max-perf: the report names the 8-bit cache" [ "$(field "$tmp/q4.auto.json" kv_cache)" = int8 ]
check "max-max-perf --kv-cache float: the float cache, other logits" \
  python3 -c "import json; a=json.load(open('$tmp/q4.auto.json')); b=json.load(open('$tmp/q4.float.json')); assert b['kv_cache'] == 'float' and a['max_abs_diff'] != b['max_abs_diff'], (a, b)"
check "balanced: the float cache by default" [ "$(field "$tmp/f32.json" kv_cache)" = float ]

# The GPU plan of the 8-bit cache (CUDA's attention reads it): its KV line is the 8-bit one and
# holds fewer bytes than the f32 cache's, asked for or as max-max-perf's default.
"$TT" -q plan "$tmp/ts.thin" --device-memory 8GiB --kv-cache int8 --json >"$tmp/p8.json"
"$TT" -q plan "$tmp/ts.thin" --device-memory 8GiB --json >"$tmp/p.json"
"$TT" -q plan "$tmp/ts.thin" --device-memory 8GiB --profile max-max-perf --json >"$tmp/pq.json"
"$TT" -q plan "$tmp/ts.thin" --device-memory 8GiB --profile max-max-perf --kv-cache float --json >"$tmp/pqf.json"
kv_line() { python3 -c 'import json,sys; l=[l for l in json.load(open(sys.argv[1]))["plan"]["vram"] if l["what"].startswith("KV cache")][0]; print(l["what"].split(" (")[1].split(" ")[0], l["bytes"])' "$1"; }
read -r w8 b8 <<<"$(kv_line "$tmp/p8.json")"; read -r w b <<<"$(kv_line "$tmp/p.json")"
check "plan --kv-cache int8: the KV line is the 8-bit cache's" [ "$w8" = "8-bit," ]
check "plan --kv-cache int8: its bytes are under a third of the f32 cache's ($b8 < $b / 3)" [ "$b8" -lt $((b / 3)) ]
check "plan --profile max-max-perf: the 8-bit KV line" [ "$(kv_line "$tmp/pq.json")" = "8-bit, $b8" ]
check "plan --profile max-max-perf --kv-cache float: the float KV line" [ "$(kv_line "$tmp/pqf.json")" = "$w $b" ]

# Layers on the CPU beside the GPU keep the 8-bit cache in host memory (their rows and scales cross
# the bus): the llama fixture (untied, so its layers can stream) at its minimum budget.
"$TT" -q convert "$S/fixtures/hf-tiny/llama" -o "$tmp/ll.thin" --dtype f32 2>/dev/null
P=(plan "$tmp/ll.thin" --device-memory 8GiB --context 64 --ram-budget 1GiB)
pj() { python3 -c "import json,sys; j=json.load(open(sys.argv[1]))['plan']; print($2)" "$1"; }
"$TT" -q "${P[@]}" --profile max-max-perf --json >"$tmp/lq.json"
lmin=$(pj "$tmp/lq.json" "j['min_vram']")
"$TT" -q "${P[@]}" --profile max-max-perf --vram-budget "$lmin" --cpu-layers 1 --json >"$tmp/lq1.json" 2>"$tmp/lq1.err"
# The float cache's working set is larger: its own minimum budget.
"$TT" -q "${P[@]}" --profile max-max-perf --kv-cache float --json >"$tmp/lqf.json"
"$TT" -q "${P[@]}" --profile max-max-perf --kv-cache float --vram-budget "$(pj "$tmp/lqf.json" "j['min_vram']")" --cpu-layers 1 \
  --json >"$tmp/lq1f.json"
host_kv() { pj "$1" "[l['bytes'] for l in j['ram'] if l['what'].startswith('KV cache of the')][0]"; }
check "max-max-perf --cpu-layers 1: one layer on the CPU beside the 8-bit cache" [ "$(pj "$tmp/lq1.json" "j['n_cpu_layers']")" = 1 ]
check "max-max-perf --cpu-layers 1: no warning" [ ! -s "$tmp/lq1.err" ]
# K and V, 64 positions, kv_dim 32: 32 bytes and 2 KV heads' f32 scales a row, against 32 x 4 bytes.
check "the CPU layer's host cache holds the 8-bit rows and scales ($(host_kv "$tmp/lq1.json") = 2 x 64 x 40)" \
  [ "$(host_kv "$tmp/lq1.json")" = $((2 * 64 * 40)) ]
check "and the float cache's the f32 rows" [ "$(host_kv "$tmp/lq1f.json")" = $((2 * 64 * 32 * 4)) ]

# head_dim 8 (the llama fixture's weights read as 8 heads of 8, 4 KV heads: the same tensor shapes):
# CUDA's 8-bit cache cannot hold it. An explicit int8 is refused naming the layer; the profile's
# default falls back to the float cache with a warning, never silently; float asks for no warning.
mkdir -p "$tmp/hd8"
cp "$S/fixtures/hf-tiny/llama/model.safetensors" "$S/fixtures/hf-tiny/llama/generation_config.json" "$tmp/hd8/"
python3 - "$S/fixtures/hf-tiny/llama/config.json" "$tmp/hd8/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(num_attention_heads=8, num_key_value_heads=4, head_dim=8)
json.dump(c, open(sys.argv[2], "w"), indent=2)
PY
"$TT" -q convert "$tmp/hd8" -o "$tmp/hd8.thin" --dtype f32 2>/dev/null
fails_with "plan --kv-cache int8, head_dim 8: refused naming the layer" \
  "hd8.thin: --kv-cache int8 on CUDA: layer 0 has head_dim 8, and CUDA's 8-bit KV cache needs a multiple of 16; use --kv-cache float, or --device cpu or host" \
  "$TT" -q plan "$tmp/hd8.thin" --device-memory 8GiB --kv-cache int8
"$TT" -q plan "$tmp/hd8.thin" --device-memory 8GiB --profile max-max-perf --json >"$tmp/h8.json" 2>"$tmp/h8.err"; rc=$?
check "plan --profile max-max-perf, head_dim 8: planned (exit 0)" [ "$rc" -eq 0 ]
check "plan --profile max-max-perf, head_dim 8: warns of the fallback" \
  grep -q "warning: .*hd8.thin: --profile max-max-perf stores the KV cache in 8 bits, but layer 0 has head_dim 8, .*the KV cache stays in the weights' float dtype on CUDA" "$tmp/h8.err"
check "plan --profile max-max-perf, head_dim 8: the float KV line" [ "$(kv_line "$tmp/h8.json" | cut -d' ' -f1)" != "8-bit," ]
"$TT" -q plan "$tmp/hd8.thin" --device-memory 8GiB --profile max-max-perf --kv-cache float >/dev/null 2>"$tmp/h8f.err"
check "plan --profile max-max-perf --kv-cache float, head_dim 8: no warning" [ ! -s "$tmp/h8f.err" ]
# The CPU reference stores any head_dim in 8 bits: no warning there, and the run says so.
"$TT" run "$tmp/hd8.thin" --device cpu --profile max-max-perf --temperature 0 --max-tokens 4 -p "1 2 3" >/dev/null 2>"$tmp/h8cpu.err"
check "run --device cpu --profile max-max-perf, head_dim 8: no fallback warning" bash -c "! grep -q 'stays in the weights' '$tmp/h8cpu.err'"

"$TT" -q run "$tmp/ts.thin" --kv-cache q4 --max-tokens 1 -p "x" >/dev/null 2>"$tmp/e"; rc=$?
check "--kv-cache q4: a usage error (exit 2)" [ "$rc" -eq 2 ]
check "--kv-cache q4: names the flag" grep -q -e "--kv-cache" "$tmp/e"
check "--kv-cache q4: lists auto, float and int8" grep -q "auto.*float.*int8" "$tmp/e"
finish
