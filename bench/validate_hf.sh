#!/usr/bin/env bash
# Issue #7's evidence, for the GPU machine (python3 there has torch + transformers), in one device
# call: `validate --hf-model` on cuda against live transformers, in profiles safe and balanced, for
#  - every supported fixture of .carry/shared/fixtures/hf-tiny, converted f32 and bf16, --suite full
#    (transformers in float32 for the f32 archive, bfloat16 for the bf16 one: the defaults);
#  - TinyStories-656K (its own tokenizer), f32, --suite full;
#  - random-weight Qwen3-0.6B and (with --with-8b) Llama-3-8B shapes made by bench/hf_random_model.py
#    (bf16 checkpoints, so bf16 archives against bfloat16 transformers), --suite quick.
# Binaries, the helper and data come from .carry/ (tests/gpu/stage.sh, run here first). Writes
# $OUT/validation.md (one table), $OUT/json/*.json (the reports), $OUT/tables/*.txt (the printed
# tables). Exit status: non-zero when any validation failed or could not run.
# usage: bench/validate_hf.sh [--with-8b] [--skip-fixtures] [--skip-shapes] [--qwen3-dir DIR] [--llama8b-dir DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/validate-out}"; mkdir -p "$OUT/json" "$OUT/tables"
C=.carry; TT=$C/bin/thintensor; S=$C/shared
with_8b=0; qwen3_dir=""; llama8b_dir=""; fixtures=1; shapes=1
while [ $# -gt 0 ]; do
  case $1 in
    --with-8b) with_8b=1 ;;
    --skip-fixtures) fixtures=0 ;;
    --skip-shapes) shapes=0 ;;
    --qwen3-dir) qwen3_dir=$2; shift ;;
    --llama8b-dir) llama8b_dir=$2; with_8b=1; shift ;;
    *) echo "unknown argument $1"; exit 2 ;;
  esac
  shift
done
source tests/gpu/libs.sh
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export THINTENSOR_HOME="$work/home"
[ -f "$C/bin/thintensor_hf.py" ] || { echo "$C/bin/thintensor_hf.py missing: run tests/gpu/stage.sh"; exit 2; }
python3 "$C/bin/thintensor_hf.py" check | tee "$OUT/engine.json" || exit 2
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
pass=0; failed=0
t0=$SECONDS
v() {  # v TAG MODEL HF_DIR SUITE PROFILE [more flags]
  local tag=$1 model=$2 hf=$3 suite=$4 prof=$5; shift 5
  if $TT validate "$model" --hf-model "$hf" --suite "$suite" --device cuda --profile "$prof" \
       --report "$OUT/json/$tag.$prof.json" "$@" >"$OUT/tables/$tag.$prof.txt" 2>"$work/err"; then
    pass=$((pass+1)); echo "ok   $tag $prof ($((SECONDS-t0)) s)"
  else
    failed=$((failed+1)); echo "FAIL $tag $prof"; cat "$OUT/tables/$tag.$prof.txt" "$work/err"
  fi
  cat "$work/err" >>"$OUT/validate.log"
}

if [ "$fixtures" = 1 ]; then
for m in llama mistral qwen2 qwen3 phi3 gemma3_text; do
  src=$S/fixtures/hf-tiny/$m
  $TT -q convert "$src" -o "$work/$m.f32.thin" --dtype f32
  $TT -q convert "$src" -o "$work/$m.bf16.thin" --dtype bf16
  for p in safe balanced; do
    v "$m.f32" "$work/$m.f32.thin" "$src" full $p
    v "$m.bf16" "$work/$m.bf16.thin" "$src" full $p
  done
done
ts=$S/models/tinystories-656k
$TT -q convert "$ts" -o "$work/ts.f32.thin" --dtype f32
for p in safe balanced; do v "tinystories-656k.f32" "$work/ts.f32.thin" "$ts" full $p; done
fi

if [ "$shapes" = 1 ]; then
# Random-weight real shapes: the checkpoint is made here unless given (Qwen3-0.6B: seconds).
if [ -z "$qwen3_dir" ]; then
  qwen3_dir=$work/qwen3-0.6b
  python3 bench/hf_random_model.py qwen3-0.6b "$qwen3_dir" "$OUT/qwen3-0.6b.make.json" --no-speed >/dev/null || failed=$((failed+1))
fi
# An archive converted beside the checkpoint (DIR.thin, e.g. left by bench/h200_bench.sh) is used as is.
arc_for() { if [ -f "$1.thin" ]; then echo "$1.thin"; else echo "$1"; fi; }
for p in safe balanced; do v "qwen3-0.6b-random.bf16" "$(arc_for "$qwen3_dir")" "$qwen3_dir" quick $p; done
if [ "$with_8b" = 1 ]; then
  if [ -z "$llama8b_dir" ]; then
    llama8b_dir=$work/llama3-8b
    python3 bench/hf_random_model.py llama3-8b "$llama8b_dir" "$OUT/llama3-8b.make.json" --no-speed >/dev/null || failed=$((failed+1))
  fi
  for p in safe balanced; do v "llama3-8b-random.bf16" "$(arc_for "$llama8b_dir")" "$llama8b_dir" quick $p; done
fi
fi

python3 - "$OUT" <<'PY' | tee "$OUT/validation.md"
import glob, json, os, sys
out = sys.argv[1]
eng = json.load(open(os.path.join(out, "engine.json")))
print(f"transformers {eng.get('transformers')} / torch {eng.get('torch')} on {eng.get('gpu', '?')}; ThinTensor on cuda.\n")
print("| model | archive | transformers | profile | suite | prompts | positions | min cosine (prompt @ pos) | max \\|Δ\\| | top-1 | top-5 | mean KL | max KL | greedy (matched / total, ties) | result |")
print("|---|---|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|---|")
for f in sorted(glob.glob(os.path.join(out, "json", "*.json"))):
    j = json.load(open(f)); o = j["overall"]; tag = os.path.basename(f).rsplit(".", 2)[0]
    model, dt = tag.rsplit(".", 1)
    g = [p["greedy"] for p in j["prompts"] if "greedy" in p]
    greedy = f"{sum(x['matched'] for x in g)} / {sum(x['total'] for x in g)}, {sum(x['near_tie'] for x in g)} ties"
    print(f"| {model} | {dt} | {j['hf_dtype']} | {j['profile']} | {j['suite']} | {len(j['prompts'])} | {o['positions']} | "
          f"{o['min_cosine']:.6f} ({o['min_cosine_prompt']} @ {o['min_cosine_position']}) | {o['max_abs_diff']:.2e} | "
          f"{100 * o['top1_agreement']:.1f}% | {100 * o['top5_agreement']:.1f}% | {o['mean_kl']:.2e} | {o['max_kl']:.2e} | "
          f"{greedy} | {'pass' if j['pass'] else 'FAIL'} |")
PY
echo "$pass passed, $failed failed ($((SECONDS-t0)) s)" | tee "$OUT/summary.txt"
[ "$failed" -eq 0 ]
