#!/usr/bin/env bash
# Issue #19 on the CPU reference: the quantized profiles pass validate's default bounds for their
# scheme (runtime/parity.h; measured in docs/QUANTIZATION.md) against the f32 logits of
# TinyStories-656K and of the hf-tiny fixtures, quantized at load from an f32 archive; `convert
# --quant` archives give the same numbers; and the bad inputs are clear errors with a non-zero exit.
set -euo pipefail
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
S="$TT_SHARED_DIR"
pass=0; failed=0
check() {  # name, command...
  local name=$1; shift
  if "$@" >"$tmp/out" 2>&1; then pass=$((pass+1)); else failed=$((failed+1)); echo "FAILED: $name"; cat "$tmp/out"; fi
}
refuses() {  # name, expected message (grep -E), command...
  local name=$1 want=$2; shift 2
  if "$@" >"$tmp/out" 2>&1; then echo "FAILED: $name: exit 0"; failed=$((failed+1))
  elif ! grep -Eq -e "$want" "$tmp/out"; then echo "FAILED: $name: no message '$want'"; cat "$tmp/out"; failed=$((failed+1))
  else pass=$((pass+1)); fi
}
# metrics of a validate --json report, for comparing two runs
metrics() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(j['min_cosine'], j['mean_kl'], j['top1_agreement'], j['max_abs_diff'])" "$1"; }

ts="$S/models/tinystories-656k"
"$THINTENSOR" -q convert "$ts" -o "$tmp/ts.thin" --dtype f32
for p in max-performance max-max-perf; do
  check "tinystories $p" "$THINTENSOR" -q validate "$tmp/ts.thin" --reference "$ts/reference.safetensors" --device cpu --profile "$p"
done
# convert --quant stores what load-time quantization computes: the same report, to the last digit.
"$THINTENSOR" -q convert "$ts" -o "$tmp/ts.q4.thin" --dtype f32 --quant int4
"$THINTENSOR" -q convert "$ts" -o "$tmp/ts.q8.thin" --dtype f32 --quant int8
for q in q8:max-performance q4:max-max-perf; do
  a=${q%%:*}; p=${q#*:}
  "$THINTENSOR" -q validate "$tmp/ts.thin" --reference "$ts/reference.safetensors" --device cpu --profile "$p" --report "$tmp/load.json" >/dev/null
  "$THINTENSOR" -q validate "$tmp/ts.$a.thin" --reference "$ts/reference.safetensors" --device cpu --profile "$p" --report "$tmp/conv.json" >/dev/null
  if [ "$(metrics "$tmp/load.json")" = "$(metrics "$tmp/conv.json")" ]; then pass=$((pass+1));
  else echo "FAILED: tinystories $a: convert --quant and load-time quantization differ"; metrics "$tmp/load.json"; metrics "$tmp/conv.json"; failed=$((failed+1)); fi
done
[ "$(stat -c %s "$tmp/ts.q4.thin")" -lt "$(stat -c %s "$tmp/ts.thin")" ] && pass=$((pass+1)) || { echo "FAILED: the INT4 archive is not smaller"; failed=$((failed+1)); }
check "inspect int4" "$THINTENSOR" inspect "$tmp/ts.q4.thin"
grep -q "^weights      INT4 body projections, 14 in groups of 32; head INT8 at load" "$tmp/out" && pass=$((pass+1)) || { echo "FAILED: inspect shows no INT4 scheme"; cat "$tmp/out"; failed=$((failed+1)); }
grep -q "format v2" "$tmp/out" && pass=$((pass+1)) || { echo "FAILED: the INT4 archive is not format v2"; failed=$((failed+1)); }

for m in llama mistral qwen2 qwen3 phi3 gemma3_text qwen3_moe mixtral qwen3_5_text qwen3_5_moe_text gemma4_text; do
  src="$S/fixtures/hf-tiny/$m"
  "$THINTENSOR" -q convert "$src" -o "$tmp/$m.thin" --dtype f32 2>/dev/null
  # note: the Gemma fixtures' random weights are far more sensitive than a trained model (Gemma 4:
  # attention scale 1 over q/k-normed heads makes the softmax sharp; its bf16 archive already
  # reaches only 0.99, validate_fixtures.sh); their measured cosines are in docs/QUANTIZATION.md.
  b8=(); b4=()
  [ "$m" = gemma4_text ] && b8=(--min-cosine 0.95) && b4=(--min-cosine 0.33)  # INT4: 0.358 measured (16 levels)
  [ "$m" = gemma3_text ] && b4=(--min-cosine 0.85)
  check "$m max-performance" "$THINTENSOR" -q validate "$tmp/$m.thin" --reference "$src/reference.safetensors" --device cpu \
        --profile max-performance "${b8[@]}"
  check "$m max-max-perf" "$THINTENSOR" -q validate "$tmp/$m.thin" --reference "$src/reference.safetensors" --device cpu \
        --profile max-max-perf "${b4[@]}"
done

# Bad input: clear errors, non-zero exit, no output file.
src="$S/fixtures/hf-tiny/llama"
"$THINTENSOR" -q convert "$src" -o "$tmp/llama.q8.thin" --quant int8 2>/dev/null
refuses "INT4 from an INT8 archive" "--profile max-max-perf needs INT4 weights, but tensor 'blk.0.attn_q.weight' is stored as INT8" \
  "$THINTENSOR" -q validate "$tmp/llama.q8.thin" --reference "$src/reference.safetensors" --device cpu --profile max-max-perf
refuses "unknown scheme" "--quant: unknown scheme 'int3' \(choose none, int8 or int4\)" \
  "$THINTENSOR" -q convert "$src" -o "$tmp/bad.thin" --quant int3
refuses "group size not dividing a row" "tensor 'blk.0.expert.0.ffn_down.weight' \[64, 96\]: INT4 group size 64 does not divide the row length 96" \
  "$THINTENSOR" -q convert "$S/fixtures/hf-tiny/mixtral" -o "$tmp/bad.thin" --quant int4 --group-size 64
refuses "group size not allowed" "--group-size 48: INT4 groups are 32, 64 or 128" \
  "$THINTENSOR" -q convert "$src" -o "$tmp/bad.thin" --quant int4 --group-size 48
[ ! -e "$tmp/bad.thin" ] && pass=$((pass+1)) || { echo "FAILED: a refused conversion left $tmp/bad.thin"; failed=$((failed+1)); }
refuses "unknown profile" "--profile: max-speed not in" \
  "$THINTENSOR" -q validate "$tmp/llama.thin" --reference "$src/reference.safetensors" --profile max-speed
# The host decode path runs the quantized profiles with its own kernels (host/gemv.h): its report is
# the CPU reference's to within the order of the f32 sums (min cosine within 1e-4, mean KL within
# 2%), on TinyStories, a dense fixture and a mixture of experts, quantized at load and stored.
same_report() {  # name, cpu.json, host.json
  if python3 - "$2" "$3" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ok = abs(a["min_cosine"] - b["min_cosine"]) <= 1e-4 and abs(a["mean_kl"] - b["mean_kl"]) <= max(0.02 * a["mean_kl"], 1e-9)
sys.exit(0 if ok else 1)
PY
  then pass=$((pass+1)); else echo "FAILED: $1: the host's report is not the CPU's"; metrics "$2"; metrics "$3"; failed=$((failed+1)); fi
}
for p in max-performance max-max-perf; do
  for m in ts llama qwen3_moe; do
    if [ $m = ts ]; then arc=$tmp/ts.thin; ref=$ts/reference.safetensors; else arc=$tmp/$m.thin; ref=$S/fixtures/hf-tiny/$m/reference.safetensors; fi
    "$THINTENSOR" -q validate "$arc" --reference "$ref" --device cpu --profile $p --report "$tmp/q.cpu.json" >/dev/null 2>&1 || true
    check "$m $p (host)" "$THINTENSOR" -q validate "$arc" --reference "$ref" --device host --profile $p --report "$tmp/q.host.json"
    same_report "$m $p (host)" "$tmp/q.cpu.json" "$tmp/q.host.json"
  done
done
check "tinystories INT8 archive (host)" "$THINTENSOR" -q validate "$tmp/ts.q8.thin" --reference "$ts/reference.safetensors" --device host \
  --profile max-performance
"$THINTENSOR" -q run "$tmp/ts.thin" --device cpu --profile max-max-perf --temperature 0 --max-tokens 40 -p "Once upon a time" >"$tmp/t.cpu" 2>/dev/null
"$THINTENSOR" -q run "$tmp/ts.q4.thin" --device host --profile max-max-perf --temperature 0 --max-tokens 40 -p "Once upon a time" >"$tmp/t.host" 2>/dev/null
cmp -s "$tmp/t.cpu" "$tmp/t.host" && [ -s "$tmp/t.cpu" ] && pass=$((pass+1)) || { echo "FAILED: INT4 greedy text on the host is not the CPU's"; cat "$tmp/t.cpu" "$tmp/t.host"; failed=$((failed+1)); }
# The planner counts the bytes the quantized profile runs (quantized at load from the f32 archive):
# the resident weights shrink, and the dequantization scratch joins the working set.
resident() { python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['plan']; print(p['vram'][0]['bytes'], any('dequantization' in l['what'] for l in p['vram']))" "$1"; }
"$THINTENSOR" -q plan "$tmp/ts.thin" --device-memory 8GiB --json >"$tmp/plan.f.json"
"$THINTENSOR" -q plan "$tmp/ts.thin" --device-memory 8GiB --profile max-max-perf --json >"$tmp/plan.q.json"
read -r fb fs <<<"$(resident "$tmp/plan.f.json")"; read -r qb qs <<<"$(resident "$tmp/plan.q.json")"
[ "$qb" -lt "$fb" ] && [ "$qs" = True ] && [ "$fs" = False ] && pass=$((pass+1)) || { echo "FAILED: plan --profile max-max-perf: resident $qb vs $fb bytes, scratch $qs"; failed=$((failed+1)); }
# Quantized experts: the GPU plan of a MoE model counts them quantized (tests/gpu/quant.sh runs them).
"$THINTENSOR" -q plan "$tmp/qwen3_moe.thin" --device-memory 8GiB --json >"$tmp/plan.moe.f.json"
"$THINTENSOR" -q plan "$tmp/qwen3_moe.thin" --device-memory 8GiB --profile max-performance --json >"$tmp/plan.moe.q.json"
read -r fb fs <<<"$(resident "$tmp/plan.moe.f.json")"; read -r qb qs <<<"$(resident "$tmp/plan.moe.q.json")"
[ "$qb" -lt "$fb" ] && [ "$qs" = True ] && pass=$((pass+1)) || { echo "FAILED: plan of qwen3_moe --profile max-performance: resident $qb vs $fb bytes"; failed=$((failed+1)); }
check "inspect --json int8" "$THINTENSOR" inspect "$tmp/ts.q8.thin" --json
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['quant']['scheme'] == 'int8' and j['format_version'] == 2 and 'max-max-perf' in j['profiles'], j['quant']" "$tmp/out" \
  && pass=$((pass+1)) || { echo "FAILED: inspect --json shows no INT8 scheme"; failed=$((failed+1)); }
echo "validate_quant: $pass passed, $failed failed"
[ "$failed" -eq 0 ]
