# Sourced by tests/gpu/run.sh (its check(), $TT, $S, $work, $OUT, $GPU_FIXTURES, and reports.sh's
# cmp_reports, which quant.sh sourced): the 8-bit KV cache on CUDA against the CPU reference's (issue #19). run.sh left
# f32 archives of the fixtures and TinyStories in $work. Both sides round each row through INT8
# (runtime/kv_cache_type.h); the writes may differ where a value's own f32 rounding sits on a tie,
# so the reports must agree as the quantized profiles' do (min cosine within 1e-4, mean KL 2%).
# - every fixture (Gemma 4's KV-shared layers and windows, Qwen3.5's hybrid layers, the MoE
#   models) and TinyStories, under balanced and under max-max-perf;
# - TinyStories' greedy text equals the CPU's, and a prompt longer than one prefill chunk of the
#   context decodes past it (prefill's dequantized rows, then decode's INT8 reads);
# - three sequence slots (batched decode) give each sequence's own logits.
# Or run alone: bash tests/gpu/kv_cache_int8.sh (after tests/gpu/stage.sh; converts the archives
# itself and runs the 8-bit cache's kernel cases first).
if [ -z "${TT:-}" ]; then
  set -uo pipefail
  cd "$(dirname "$0")/../.."
  C=.carry
  [ -f $C/payload.tar.xz ] && [ ! -x $C/bin/thintensor ] && xz -dc $C/payload.tar.xz | tar -C $C -xf -
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
    [ $m = gemma4_text ] && { [ $p = max-max-perf ] && b=(--min-cosine 0.4) || b=(--min-cosine 0.99); }
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
if [ -n "${standalone:-}" ]; then
  echo "$pass passed, $failed failed"
  [ "$failed" -eq 0 ]
fi
