# Sourced by tests/gpu/run.sh (its check(), $TT, $S, $work, $OUT, $GPU_FIXTURES, and reports.sh's
# cmp_reports, which quant.sh sourced): the 8-bit KV cache on CUDA against the CPU reference's (issue #19). run.sh left
# f32 archives of the fixtures and TinyStories in $work. Both sides round each row through INT8
# (runtime/kv_cache_type.h); the writes may differ where a value's own f32 rounding sits on a tie,
# so the reports must agree as the quantized profiles' do (min cosine within 1e-4, mean KL 2%).
# - every fixture (Gemma 4's KV-shared layers and windows, Qwen3.5's hybrid layers, the MoE
#   models) and TinyStories, under balanced and under max-max-perf;
# - TinyStories' greedy text equals the CPU's, and a prompt longer than one prefill chunk of the
#   context decodes past it (prefill's dequantized rows, then decode's INT8 reads);
# - three sequence slots (batched decode) give each sequence's own logits;
# - layers on the CPU beside the GPU with the 8-bit cache (their rows and row scales cross the bus,
#   cuda_backend.cpp's copy_cpu_kv): at a --vram-budget where layers stream, the llama fixture's
#   report with them on the CPU is the CPU reference's (--kv-cache int8, and max-max-perf's
#   default), and TinyStories' greedy text is the CPU's after a long prompt (rows down to the
#   host) and across two chat turns (the CPU layers' rows up to the GPU for the second prefill);
# - max-max-perf's default on a head_dim CUDA cannot hold in 8 bits (8): the float cache with a
#   warning, an explicit int8 refused naming the layer; bench --json and describe() name the cache.
# Or run alone: bash tests/gpu/kv_cache_int8.sh (after tests/gpu/stage.sh; converts the archives
# itself and runs the 8-bit cache's kernel cases first).
if [ -z "${TT:-}" ]; then
  set -uo pipefail
  cd "$(dirname "$0")/../.."
  C=.carry
  TT=$C/bin/thintensor; S=$C/shared; OUT=${OUT:-$PWD/gpu-out}; mkdir -p "$OUT"
  source tests/gpu/libs.sh
  source tests/gpu/fixtures.sh
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
  pass=0; failed=0
  check() { local name=$1; shift; if "$@" >"$work/log" 2>&1; then pass=$((pass+1)); echo "ok   $name"; else failed=$((failed+1)); echo "FAIL $name"; cat "$work/log"; fi; }
  source tests/gpu/reports.sh  # cmp_reports
  check "kernel cases (rope_qkv, decode_attention)" $C/bin/gpu_tests --gtest_brief=1 --gtest_filter='*rope*:*decode_attention*'
  for m in $GPU_FIXTURES; do $TT -q convert "$S/fixtures/hf-tiny/$m" -o "$work/$m.f32.thin" --dtype f32; done
  $TT -q convert "$S/models/tinystories-656k" -o "$work/ts.thin" --dtype f32
  standalone=1
fi
for p in balanced max-max-perf; do
  for m in ts $GPU_FIXTURES; do
    if [ $m = ts ]; then arc=$work/ts.thin; ref=$S/models/tinystories-656k/reference.safetensors
    else arc=$work/$m.f32.thin; ref=$S/fixtures/hf-tiny/$m/reference.safetensors; fi
    b=()  # validate_quant.sh's and kv_cache_int8.sh's bounds for the sharp Gemma fixtures
    [ $m = gemma4_text ] && { [ $p = max-max-perf ] && b=(--min-cosine 0.33) || b=(--min-cosine 0.99); }
    [ $m = gemma3_text ] && [ $p = max-max-perf ] && b=(--min-cosine 0.85)
    $TT -q validate "$arc" --reference "$ref" --device cpu --profile $p --kv-cache int8 "${b[@]}" --report "$work/k.cpu.json" >/dev/null 2>&1
    check "$m $p --kv-cache int8 (cuda) passes its bounds" $TT -q validate "$arc" --reference "$ref" --device cuda --profile $p \
      --kv-cache int8 "${b[@]}" --report "$work/k.cuda.json"
    check "$m $p --kv-cache int8: cuda's report is the cpu's" cmp_reports "$work/k.cpu.json" "$work/k.cuda.json"
    cat "$work/log" >>"$OUT/kv_int8.log"
  done
done
$TT -q run "$work/ts.thin" --temperature 0 --max-tokens 300 --device cpu --kv-cache int8 >"$work/k.cpu.txt"
$TT -q run "$work/ts.thin" --temperature 0 --max-tokens 300 --device cuda --kv-cache int8 >"$work/k.cuda.txt"
check "tinystories --kv-cache int8: greedy text on cuda is the cpu's (300 tokens)" cmp "$work/k.cpu.txt" "$work/k.cuda.txt"
cp "$work/k.cuda.txt" "$OUT/ts.kv-int8.cuda.txt"
# A prompt of 200 tokens of that text in prefill chunks of 64 (--context 256: the planner's chunk
# is the context's when smaller), then decode: the CPU's continuation.
head -c 900 "$work/k.cpu.txt" >"$work/k.prompt.txt"
$TT -q run "$work/ts.thin" --temperature 0 --max-tokens 40 --context 512 --device cpu --kv-cache int8 --prompt-file "$work/k.prompt.txt" >"$work/k2.cpu.txt"
$TT -q run "$work/ts.thin" --temperature 0 --max-tokens 40 --context 512 --device cuda --kv-cache int8 --prompt-file "$work/k.prompt.txt" >"$work/k2.cuda.txt"
check "tinystories --kv-cache int8: a long prompt, then decode: cuda's text is the cpu's" cmp "$work/k2.cpu.txt" "$work/k2.cuda.txt"
check "batched decode with the 8-bit cache == each sequence alone" env TT_SEQ_ARCHIVES="$work/ts.thin $work/llama.f32.thin" \
  TT_SEQ_KV_CACHE=int8 $C/bin/gpu_tests --gtest_filter='Sequences.*'

# ---- layers on the CPU beside the GPU, with the 8-bit cache ----
# The smallest VRAM budget of archive $1 at context $2 for the KV flags that follow, with no layer
# on the CPU, and how many layers stream at budget $3 (the layers --cpu-layers can take). The plan
# must be of the same cache as the run: its bytes are part of the working set.
kv_min_vram() { local a=$1 c=$2; shift 2; $TT -q plan "$a" --context "$c" --cpu-layers 0 "$@" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["plan"]["min_vram"])'; }
kv_n_streamed() { local a=$1 c=$2 b=$3; shift 3; $TT -q plan "$a" --context "$c" --cpu-layers 0 --vram-budget "$b" "$@" --json | python3 -c 'import json,sys; p=json.load(sys.stdin)["plan"]; print(p["n_layers"]-p["n_resident_layers"])'; }
lref=$S/fixtures/hf-tiny/llama/reference.safetensors
for kv in "--profile balanced --kv-cache int8" "--profile max-max-perf"; do
  read -r -a f <<<"$kv"
  lb=$(kv_min_vram "$work/llama.f32.thin" 64 "${f[@]}")
  lns=$(kv_n_streamed "$work/llama.f32.thin" 64 "$lb" "${f[@]}")
  if [ "${lns:-0}" -gt 0 ]; then
    $TT -q validate "$work/llama.f32.thin" --reference "$lref" --device cpu --context 64 "${f[@]}" --report "$work/kl.cpu.json" >/dev/null 2>&1
    check "llama $kv: $lns streamed layer(s) on the CPU beside the 8-bit cache (cuda) passes its bounds" \
      $TT -q validate "$work/llama.f32.thin" --reference "$lref" --device cuda --context 64 "${f[@]}" --vram-budget "$lb" \
        --cpu-layers "$lns" --report "$work/kl.cuda.json"
    check "llama $kv, $lns layer(s) on the CPU: cuda's report is the cpu's" cmp_reports "$work/kl.cpu.json" "$work/kl.cuda.json"
    check "llama $kv, $lns layer(s) on the CPU: the report names the 8-bit cache and the CPU layers" python3 -c "
import json; j = json.load(open('$work/kl.cuda.json'))
assert j['kv_cache'] == 'int8' and 'layers on the CPU' in j['device'] and '8-bit KV cache' in j['device'], j['device']"
    cat "$work/log" >>"$OUT/kv_int8.log"
  else
    echo "skip llama $kv: nothing streams at the minimum budget, so no layer can go to the CPU"
  fi
done
# TinyStories (f32, balanced: its INT4 layers all fit at the minimum budget) with the 8-bit cache
# and 2 layers on the CPU: the CPU reference's greedy text, from the BOS token and after a prompt of
# 200 tokens prefilled on the GPU (their rows and scales copied down before the CPU layers decode).
tb=$(kv_min_vram "$work/ts.thin" 256 --kv-cache int8)
tns=$(kv_n_streamed "$work/ts.thin" 256 "$tb" --kv-cache int8)
if [ "${tns:-0}" -ge 2 ]; then
  k=(--temperature 0 --context 256 --kv-cache int8)
  $TT -q run "$work/ts.thin" "${k[@]}" --max-tokens 200 --device cpu >"$work/kc.cpu.txt"
  $TT run "$work/ts.thin" "${k[@]}" --max-tokens 200 --device cuda --vram-budget "$tb" --cpu-layers 2 >"$work/kc.cuda.txt" 2>"$work/kc.cuda.err"
  check "tinystories --kv-cache int8, 2 layers on the CPU: greedy text on cuda is the cpu's" \
    sh -c "cmp '$work/kc.cpu.txt' '$work/kc.cuda.txt' && grep -q '2 computed on the CPU' '$work/kc.cuda.err'"
  grep -h "plan:" "$work/kc.cuda.err" | head -1 >>"$OUT/kv_int8.log"
  head -c 900 "$work/kc.cpu.txt" >"$work/kc.prompt.txt"
  $TT -q run "$work/ts.thin" "${k[@]}" --max-tokens 40 --device cpu --prompt-file "$work/kc.prompt.txt" >"$work/kc2.cpu.txt"
  $TT -q run "$work/ts.thin" "${k[@]}" --max-tokens 40 --device cuda --vram-budget "$tb" --cpu-layers 2 \
    --prompt-file "$work/kc.prompt.txt" >"$work/kc2.cuda.txt"
  check "tinystories --kv-cache int8, 2 layers on the CPU: a long prompt, then decode: cuda's text is the cpu's" \
    cmp "$work/kc2.cpu.txt" "$work/kc2.cuda.txt"
  # Two chat turns: the second turn's prompt is prefilled on the GPU after the first reply's decode
  # steps, over the CPU layers' rows copied up with their scales.
  printf '%s' '{% for m in messages %}{{ m.content }}{{ "\n" }}{% endfor %}' >"$work/story.jinja"
  turns="Once upon a time, there was a cat named Tom.
One day, Tom saw a big red ball."
  printf '%s\n' "$turns" | $TT -q chat "$work/ts.thin" --template "$work/story.jinja" "${k[@]}" -n 40 --device cpu >"$work/kc3.cpu.txt"
  printf '%s\n' "$turns" | $TT -q chat "$work/ts.thin" --template "$work/story.jinja" "${k[@]}" -n 40 --device cuda \
    --vram-budget "$tb" --cpu-layers 2 >"$work/kc3.cuda.txt"
  check "tinystories --kv-cache int8, 2 layers on the CPU: two chat turns on cuda are the cpu's" \
    sh -c "[ \$(wc -l <'$work/kc3.cpu.txt') -ge 2 ] && cmp '$work/kc3.cpu.txt' '$work/kc3.cuda.txt'"
else
  echo "skip tinystories --kv-cache int8 with CPU layers: $tns layer(s) stream at the minimum budget (2 needed)"
fi

# ---- which cache CUDA stores: the profile's default, its fallback, and the reports ----
$TT -q bench "$work/ts.thin" --device cuda --profile max-max-perf --prompt-lengths 16 --gen-tokens 8 --depths 0 --reps 1 --json \
  >"$work/kb.json" 2>/dev/null
check "bench --json, max-max-perf on cuda: the 8-bit cache" python3 -c "
import json; j = json.load(open('$work/kb.json')); assert j['kv_cache'] == 'int8' and '8-bit KV cache' in j['backend'], (j['kv_cache'], j['backend'])"
# head_dim 8: the llama fixture's weights read as 8 heads of 8 (4 KV heads; the same tensor shapes).
mkdir -p "$work/hd8"
cp "$S/fixtures/hf-tiny/llama/model.safetensors" "$S/fixtures/hf-tiny/llama/generation_config.json" "$work/hd8/"
python3 - "$S/fixtures/hf-tiny/llama/config.json" "$work/hd8/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(num_attention_heads=8, num_key_value_heads=4, head_dim=8)
json.dump(c, open(sys.argv[2], "w"), indent=2)
PY
$TT -q convert "$work/hd8" -o "$work/hd8.thin" --dtype f32
$TT run "$work/hd8.thin" --device cuda --profile max-max-perf --temperature 0 --max-tokens 8 -p "1 2 3" >"$work/h8.cuda.txt" 2>"$work/h8.cuda.err"; rc=$?
check "head_dim 8, max-max-perf on cuda: runs on the float cache, with a warning" sh -c \
  "[ $rc -eq 0 ] && grep -q 'warning: .*--profile max-max-perf stores the KV cache in 8 bits, but layer 0 has head_dim 8' '$work/h8.cuda.err'"
$TT -q run "$work/hd8.thin" --device cpu --profile max-max-perf --kv-cache float --temperature 0 --max-tokens 8 -p "1 2 3" \
  >"$work/h8.cpu.txt" 2>/dev/null
check "head_dim 8, max-max-perf on cuda: the CPU's float-cache greedy ids" cmp "$work/h8.cpu.txt" "$work/h8.cuda.txt"
$TT -q run "$work/hd8.thin" --device cuda --kv-cache int8 --max-tokens 1 -p "1" >/dev/null 2>"$work/h8i.err"; rc=$?
check "head_dim 8, --kv-cache int8 on cuda: refused naming the layer" sh -c \
  "[ $rc -ne 0 ] && grep -q -e '--kv-cache int8 on CUDA: layer 0 has head_dim 8' '$work/h8i.err'"
$TT -q bench "$work/hd8.thin" --device cuda --profile max-max-perf --prompt-lengths 16 --gen-tokens 8 --depths 0 --reps 1 --json \
  >"$work/h8b.json" 2>/dev/null
check "bench --json, head_dim 8, max-max-perf on cuda: the float cache" python3 -c "
import json; j = json.load(open('$work/h8b.json')); assert j['kv_cache'] == 'float' and '8-bit' not in j['backend'], (j['kv_cache'], j['backend'])"

if [ -n "${standalone:-}" ]; then
  echo "$pass passed, $failed failed"
  [ "$failed" -eq 0 ]
fi
