# Sourced by tests/gpu/run.sh (its check(), $TT, $S, $work, $OUT): the quantized profiles on CUDA
# against the CPU reference (issue #19). run.sh left f32 archives of the fixtures and TinyStories
# in $work. For each profile, on TinyStories-656K and every fixture (the MoE ones' experts
# quantized too, and qwen3_moe's also streamed through the expert cache):
# - validate on CUDA passes the profile's bounds (validate_quant.sh's, the CPU's);
# - CUDA's report equals the CPU's to within the summation order: min cosine within 1e-4, mean
#   KL within 2% (both sides read the same INT8/INT4 values and scales; only the order of the f32
#   sums and the f32 prefill GEMMs differ);
# - TinyStories' greedy text is the CPU's, quantized at load and from a `convert --quant` archive,
#   resident and streamed (a --vram-budget below the resident plan), and with a layer on the CPU
#   beside the stream where one streams; the llama fixture's report with its streamed layers on
#   the CPU is the CPU reference's.
source tests/gpu/reports.sh  # cmp_reports
# The minimum VRAM of archive $1 under profile $2 at context $3 with no layer on the CPU, and how
# many layers stream at that budget (the layers --cpu-layers can take).
min_vram_q() { $TT -q plan "$1" --profile "$2" --context "$3" --cpu-layers 0 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["plan"]["min_vram"])'; }
n_streamed_q() { $TT -q plan "$1" --profile "$2" --context "$3" --cpu-layers 0 --vram-budget "$4" --json | python3 -c 'import json,sys; p=json.load(sys.stdin)["plan"]; print(p["n_layers"]-p["n_resident_layers"])'; }
for p in max-performance max-max-perf; do
  for m in ts llama mistral qwen2 qwen3 phi3 gemma3_text qwen3_moe mixtral qwen3_5_text qwen3_5_moe_text gemma4_text; do
    if [ $m = ts ]; then arc=$work/ts.thin; ref=$S/models/tinystories-656k/reference.safetensors
    else arc=$work/$m.f32.thin; ref=$S/fixtures/hf-tiny/$m/reference.safetensors; fi
    b=()  # validate_quant.sh's bounds for the Gemma fixtures
    [ $m = gemma4_text ] && { [ $p = max-performance ] && b=(--min-cosine 0.95) || b=(--min-cosine 0.33); }
    [ $m = gemma3_text ] && [ $p = max-max-perf ] && b=(--min-cosine 0.85)
    $TT -q validate "$arc" --reference "$ref" --device cpu --profile $p "${b[@]}" --report "$work/q.cpu.json" >/dev/null 2>&1
    check "$m $p (cuda) passes its bounds" $TT -q validate "$arc" --reference "$ref" --device cuda --profile $p "${b[@]}" --report "$work/q.cuda.json"
    check "$m $p: cuda's report is the cpu's" cmp_reports "$work/q.cpu.json" "$work/q.cuda.json"
    if [ $m = qwen3_moe ]; then
      check "$m $p (cuda, --expert-slots 4) passes its bounds" $TT -q validate "$arc" --reference "$ref" --device cuda --profile $p \
        --expert-slots 4 --report "$work/q.slots.json"
      check "$m $p: experts in 4 cache slots give the resident report" cmp_reports "$work/q.cuda.json" "$work/q.slots.json"
    fi
    cat "$work/log" >>"$OUT/quant.log"
  done
  q=int8; [ $p = max-max-perf ] && q=int4
  $TT -q convert $S/models/tinystories-656k -o "$work/ts.$q.thin" --dtype f32 --quant $q
  $TT -q run "$work/ts.thin" --temperature 0 --max-tokens 120 --device cpu --profile $p >"$work/ts.$q.cpu.txt"
  $TT -q run "$work/ts.thin" --temperature 0 --max-tokens 120 --device cuda --profile $p >"$work/ts.$q.cuda.txt"
  $TT -q run "$work/ts.$q.thin" --temperature 0 --max-tokens 120 --device cuda --profile $p >"$work/ts.$q.stored.txt"
  budget=$($TT -q plan "$work/ts.$q.thin" --json | python3 -c 'import json,sys; p=json.load(sys.stdin)["plan"]; print(p["min_vram"] + 200 * 1024)')
  $TT -q run "$work/ts.$q.thin" --temperature 0 --max-tokens 120 --device cuda --profile $p --vram-budget "$budget" >"$work/ts.$q.stream.txt" 2>"$work/ts.$q.stream.err"
  check "tinystories $p: greedy text on cuda is the cpu's" cmp "$work/ts.$q.cpu.txt" "$work/ts.$q.cuda.txt"
  check "tinystories $p: a convert --quant $q archive gives the same text" cmp "$work/ts.$q.cpu.txt" "$work/ts.$q.stored.txt"
  check "tinystories $p: streamed gives the same text" cmp "$work/ts.$q.cpu.txt" "$work/ts.$q.stream.txt"
  grep -h "plan:" "$work/ts.$q.stream.err" | head -1 >>"$OUT/quant.log"
  # Quantized layers on the CPU beside the stream (host/host_layers.h on INT8/INT4 rows), from the
  # stored archive and quantized at load: the CPU's greedy text across prefill and decode. At its
  # minimum budget a quantized model this small may keep every layer resident (the ring's two
  # slots cost as much as its layers): then nothing streams, and the check says so and skips.
  for src in "$work/ts.$q.thin" "$work/ts.thin"; do
    budget=$(min_vram_q "$src" $p 256)
    ns=$(n_streamed_q "$src" $p 256 "$budget")
    [ "${ns:-0}" -gt 0 ] || { echo "skip tinystories $p ($(basename "$src")): nothing streams at the minimum budget, so no layer can go to the CPU"; continue; }
    $TT run "$src" --temperature 0 --max-tokens 120 --context 256 --device cuda --profile $p --vram-budget "$budget" \
      --cpu-layers 1 >"$work/ts.$q.cpu1.txt" 2>"$work/ts.$q.cpu1.err"
    check "tinystories $p: one $q layer on the CPU beside the stream ($(basename "$src")) gives the same text" \
      sh -c "cmp '$work/ts.$q.cpu.txt' '$work/ts.$q.cpu1.txt' && grep -q '1 computed on the CPU' '$work/ts.$q.cpu1.err'"
    grep -h "plan:" "$work/ts.$q.cpu1.err" | head -1 >>"$OUT/quant.log"
  done
  # The same on the llama fixture (its validate report against the CPU's), where layers do stream.
  lref=$S/fixtures/hf-tiny/llama/reference.safetensors
  lb=$(min_vram_q "$work/llama.f32.thin" $p 64)
  lns=$(n_streamed_q "$work/llama.f32.thin" $p 64 "$lb")
  if [ "${lns:-0}" -gt 0 ]; then
    $TT -q validate "$work/llama.f32.thin" --reference "$lref" --device cpu --profile $p --context 64 --report "$work/ql.cpu.json" >/dev/null 2>&1
    check "llama $p: $lns streamed layer(s) on the CPU (cuda) passes its bounds" $TT -q validate "$work/llama.f32.thin" --reference "$lref" \
      --device cuda --profile $p --context 64 --vram-budget "$lb" --cpu-layers "$lns" --report "$work/ql.cuda.json"
    check "llama $p: with $lns layer(s) on the CPU, cuda's report is the cpu's" cmp_reports "$work/ql.cpu.json" "$work/ql.cuda.json"
  else
    echo "skip llama $p: nothing streams at the minimum budget"
  fi
  cp "$work/ts.$q.cuda.txt" "$OUT/"
done
