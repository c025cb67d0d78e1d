#!/usr/bin/env bash
# The issue #5 benchmark, end to end in one GPU-machine call: random-weight checkpoints of the
# Llama-3-8B and Qwen3-0.6B shapes made by transformers, transformers' own decode/prefill speed on
# them, ThinTensor's convert + parity (validate against transformers' logits) + bench, all in the
# same run. Binaries from .carry/ (tests/gpu/stage.sh). Results: $OUT/bench.md and JSON files.
# usage: bench/h200_bench.sh [shape...]   (default: qwen3-0.6b llama3-8b)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/bench-out}"; mkdir -p "$OUT"
source tests/gpu/libs.sh
TT=.carry/bin/thintensor
work=${BENCH_WORK:-/tmp/ttbench}; mkdir -p "$work"
shapes=("$@"); [ ${#shapes[@]} -gt 0 ] || shapes=(qwen3-0.6b llama3-8b)
log="$OUT/bench.log"
{
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
for shape in "${shapes[@]}"; do
  ck="$work/$shape"; arc="$work/$shape.thin"
  echo "=== $shape: transformers (random init, bf16, sdpa)"
  PYTHONUNBUFFERED=1 python3 bench/hf_random_model.py "$shape" "$ck" "$OUT/hf-$shape.json" --gen 32 --prefill 2048 || { echo "transformers step failed"; continue; }
  echo "=== $shape: convert"
  /usr/bin/time -f "convert wall %e s, max RSS %M KiB" $TT convert "$ck" -o "$arc" 2>&1 | tail -2
  ls -l "$arc"
  echo "=== $shape: parity against transformers' bf16 logits"
  devices="cuda"
  for dev in $devices; do
    for key in logits_bf16 logits_f32; do
      $TT -q validate "$arc" --reference "$ck/reference.safetensors" --key $key --device $dev --min-cosine 0.99 --json > "$OUT/validate-$shape-$dev-$key.json"
      python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[2], {k: j[k] for k in ['min_cosine','max_abs_diff','top1_agreement','mean_kl','greedy_match','greedy_expected']})" "$OUT/validate-$shape-$dev-$key.json" "$dev vs $key"
    done
  done
  echo "=== $shape: bench"
  depths=0; [ "$shape" = llama3-8b ] && depths=0,16384
  $TT bench "$arc" --device cuda --prompt-lengths 512,2048 --gen-tokens 128 --depths $depths --reps 3 --json > "$OUT/bench-$shape.json"
  python3 - "$OUT/bench-$shape.json" "$OUT/hf-$shape.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1])); h = json.load(open(sys.argv[2]))
print(f"backend {b['backend']}  load {b['load_s']:.2f} s  peak VRAM {b['peak_vram_bytes']/2**30:.2f} GiB  copy {b['device_copy_gbs']:.0f} GB/s  gemm {b['gemm_tflops']:.0f} TFLOP/s")
for r in b["results"]:
    if r["test"].startswith("pp"):
        print(f"{r['test']:>14}: {r['tokens_per_s']:9.1f} tok/s ± {r['sd']:.1f}  {r['tflops']:.1f} TFLOP/s = {100*r['tflops']/r['peak_tflops']:.1f}% of GEMM peak  ttft {r['ttft_ms']:.1f} ms")
    else:
        print(f"{r['test']:>14}: {r['tokens_per_s']:9.1f} tok/s ± {r['sd']:.1f}  {r['bytes_per_token']/1e9:.3f} GB/token  {r['gbs']:.0f} GB/s = {100*r['gbs']/r['roofline_gbs']:.1f}% of roofline ({r['roofline_tokens_per_s']:.0f} tok/s)")
tg = [r for r in b["results"] if r["test"].startswith("tg")][0]
pp = [r for r in b["results"] if r["test"] == "pp2048"]
print(f"transformers: decode {h['hf_decode_tok_s']:.1f} tok/s (ThinTensor x{tg['tokens_per_s']/h['hf_decode_tok_s']:.1f}), prefill {h['hf_prefill_tok_s']:.0f} tok/s" +
      (f" (ThinTensor x{pp[0]['tokens_per_s']/h['hf_prefill_tok_s']:.2f})" if pp else ""))
PY
  # KEEP_MODELS=1 leaves them for a chained call (bench/streaming_bench.sh, bench/validate_hf.sh).
  [ -n "${KEEP_MODELS:-}" ] || rm -rf "$ck" "$arc"  # keep the disk for the next shape
done
} 2>&1 | tee "$log"
