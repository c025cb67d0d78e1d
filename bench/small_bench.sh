#!/usr/bin/env bash
# Issue #21's small models against llama.cpp and calm, same checkpoints, same run, one GPU-machine
# call: random-weight Qwen3-0.6B and Qwen2.5-0.5B made by transformers (bf16), each figure beside
# its roofline (the bytes a token over the device copy rate `bench` measures):
#   ThinTensor   parity against transformers' logits (64 tokens), then `thintensor bench
#                --prompt-lengths 0 --gen-tokens 128 --reps 3` with nvidia-smi's peak VRAM, on a
#                quiet host (and, when llama.cpp builds here, once during the build as well, flagged
#                in concurrency.tsv)
#   llama.cpp    llama-bench -ngl 99 -fa 1 -p 0 -n 128 -r 3 on the bf16 GGUF of the same checkpoint
#   calm         `run M.calm -n 128 -t 0` on its fp16 conversion (calm has no Qwen3: Qwen2.5 only);
#                calm's own throughput line (generation after a 5-token prompt)
# Inputs in CARRY_DIR (default .carry): bin/thintensor (+ lib/, or payload.tar.xz), anchors/
# {llama.cpp-src.tar.xz,build_llama.sh,calm/}, tokenizers/qwen3 (tokenizer.json.xz,
# tokenizer_config.json: the GGUF converter and calm read the checkpoint's tokenizer; Qwen2.5 has
# Qwen3's vocabulary). Outputs in $OUT: small.log, small-summary.md and every measurement's JSON.
# SHAPES (default "qwen3-0.6b qwen2.5-0.5b"); LLAMA=0 leaves llama.cpp out; LLAMA_DIR: a finished
# build_llama.sh build to use instead of building one (bench/h200_session.sh passes quant_bench's);
# BENCH_DEADLINE_S (default 560). BENCH_WORK (default /dev/shm/small) is emptied first and removed
# at the end.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.." || exit 2
repo=$PWD
carry=$(cd "${1:-.carry}" 2>/dev/null && pwd) || { echo "carry folder ${1:-.carry} not found"; exit 2; }
OUT="${OUT:-$PWD/small-out}"; mkdir -p "$OUT"
work=${BENCH_WORK:-/dev/shm/small}
case "$work" in /|/dev/shm|/tmp|"$HOME"|"") echo "BENCH_WORK=$work: give a folder of its own (it is emptied)"; exit 2;; esac
rm -rf "$work"; mkdir -p "$work"
res=$OUT; lldir=${LLAMA_DIR:-$work/llama}; bin=$lldir/lltrim/build/bin
shapes=${SHAPES:-qwen3-0.6b qwen2.5-0.5b}
export THINTENSOR_HOME="$work/home"
TT=$carry/bin/thintensor
deadline=${BENCH_DEADLINE_S:-560}
log="$OUT/small.log"
source "$repo/tests/gpu/libs.sh"
t_start=$(date +%s)
source "$repo/bench/lib/steps.sh"
source "$repo/bench/lib/vram.sh"
run_header
vram_idle=$(smi_used)

[ "${LLAMA:-1}" = 0 ] && say "LLAMA=0: llama.cpp is not built, converted or measured in this run"
if [ "${LLAMA:-1}" != 0 ] && build_ok; then
  say "llama.cpp: the build in $lldir"
elif [ "${LLAMA:-1}" != 0 ]; then
  run_step "llama.cpp build (background, nice 15)" nice -n 15 bash "$carry/anchors/build_llama.sh" "$carry/anchors/llama.cpp-src.tar.xz" "$lldir" --background
fi

# The checkpoints, their archives (parity checked) and, for calm, its conversion.
for s in $shapes; do
  ck=$work/$s
  run_step "checkpoint: random $s (transformers init, bf16) and its 64-token reference logits" \
    timeout "$(cap 120)" python3 bench/hf_random_model.py "$s" "$ck" "$res/hf-$s.json" --no-speed --no-f32
  [ -f "$ck/config.json" ] || { say "$s: no checkpoint, nothing to measure"; continue; }
  # The reference logits out of the folder: the GGUF converter and calm read every safetensors file in it.
  mv "$ck/reference.safetensors" "$work/$s.reference.safetensors"
  { xz -dc "$carry/tokenizers/qwen3/tokenizer.json.xz" >"$ck/tokenizer.json" && cp "$carry/tokenizers/qwen3/tokenizer_config.json" "$ck/"; } || say "$s: tokenizer copy failed"
  run_step "$s: convert --dtype bf16" timeout "$(cap 60)" "$TT" -q convert "$ck" -o "$work/$s.thin" --dtype bf16
  run_step "$s: validate against transformers' bf16 logits" timeout "$(cap 60)" \
    sh -c "'$TT' -q validate '$work/$s.thin' --reference '$work/$s.reference.safetensors' --key logits_bf16 --device cuda --min-cosine 0.99 --json >'$res/validate-$s.json'"
  if [ "$s" = qwen2.5-0.5b ]; then
    run_step "$s: calm convert (fp16)" timeout "$(cap 120)" python3 "$carry/anchors/calm/convert.py" "$work/$s.calm" "$ck" --dtype fp16
  fi
done

tt_bench() {  # tt_bench SHAPE NAME: tg128 and its peak VRAM into $res/bench-NAME.json
  [ -f "$work/$1.thin" ] || return 0
  enough 40 "ThinTensor $2" || return 0
  vram_start "tt-$2"
  run_step "ThinTensor $2: bench tg128" timeout "$(cap 90)" \
    sh -c "'$TT' bench '$work/$1.thin' --device cuda --prompt-lengths 0 --gen-tokens 128 --reps 3 --json >'$res/bench-$2.json'"
  vram_stop
}
build_running && for s in $shapes; do tt_bench "$s" "$s-during-build"; done
if [ -f "$work/qwen2.5-0.5b.calm" ] && enough 40 "calm"; then
  run_step "calm qwen2.5-0.5b: run -n 128 -t 0" timeout "$(cap 60)" \
    sh -c "'$carry/anchors/calm/run' '$work/qwen2.5-0.5b.calm' -n 128 -i 'Once upon a time' -t 0 >'$res/calm-qwen2.5-0.5b.out' 2>&1"
fi

if [ "${LLAMA:-1}" != 0 ]; then
  wait_quiet "the llama.cpp build" "$(( $(left) - 120 > 0 ? $(left) - 120 : 0 ))" || say "llama.cpp build still running"
  if build_ok; then
    for s in $shapes; do
      [ -f "$work/$s/config.json" ] || continue
      enough 60 "llama.cpp $s" || continue
      run_step "$s: GGUF bf16" timeout "$(cap 90)" sh -c "cd '$lldir/lltrim' && PYTHONPATH='$lldir/lltrim/gguf-py' python3 convert_hf_to_gguf.py '$work/$s' --outtype bf16 --outfile '$work/$s.gguf'"
      [ -s "$work/$s.gguf" ] || continue
      vram_start "llama-$s"
      run_step "llama.cpp $s: llama-bench -ngl 99 -fa 1 -p 0 -n 128 -r 3" timeout "$(cap 90)" \
        sh -c "'$bin/llama-bench' -m '$work/$s.gguf' -ngl 99 -fa 1 -p 0 -n 128 -r 3 -o jsonl >'$res/llama-bench-$s.jsonl' 2>'$res/llama-bench-$s.err'"
      vram_stop
    done
  else
    say "llama.cpp build failed or unfinished: $(tail -3 "$lldir/build.log" 2>/dev/null | tr '\n' ' ')"
  fi
fi
# Quiet host (the build is over): ThinTensor again, the figure the summary takes when present.
for s in $shapes; do tt_bench "$s" "$s"; done

python3 - "$res" $shapes >"$OUT/small-summary.md" <<'PY'
import glob, json, os, re, sys
res, shapes = sys.argv[1], sys.argv[2:]
def load(p):
    try: return json.load(open(p))
    except Exception: return None
def vram(name):
    try:
        for line in open(os.path.join(res, "vram.tsv")):
            f = line.rstrip("\n").split("\t")
            if f[0] == name: peak = f[3]
        return f"{int(peak) / 1024:.2f} GiB"
    except Exception: return "–"
print("| shape | GB / token | roofline tok/s | ThinTensor tok/s | % of roofline | peak VRAM | llama.cpp bf16 tok/s | calm fp16 tok/s | ThinTensor / llama.cpp | ThinTensor / calm |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for s in shapes:
    name = s if os.path.exists(os.path.join(res, f"bench-{s}.json")) else f"{s}-during-build"
    b = load(os.path.join(res, f"bench-{name}.json"))
    tt = gb = roof = None
    if b:
        r = [x for x in b["results"] if x["test"].startswith("tg")][0]
        tt, gb, roof = r["tokens_per_s"], r["bytes_per_token"] / 1e9, r["roofline_tokens_per_s"]
    ll = None
    try:
        rows = [json.loads(l) for l in open(os.path.join(res, f"llama-bench-{s}.jsonl")) if l.strip()]
        ll = [r["avg_ts"] for r in rows if r.get("n_gen", 0) > 0][0]
    except Exception: pass
    calm = None
    try:
        m = re.search(r"throughput: ([0-9.]+) tok/s", open(os.path.join(res, f"calm-{s}.out")).read())
        calm = float(m.group(1)) if m else None
    except Exception: pass
    f = lambda v, fmt: fmt.format(v) if v is not None else "–"
    note = " (during the llama.cpp build)" if name != s else ""
    print(f"| {s}{note} | {f(gb, '{:.3f}')} | {f(roof, '{:.0f}')} | {f(tt, '{:.1f}')} | {f(tt / roof * 100 if tt and roof else None, '{:.1f}%')} | "
          f"{vram('tt-' + name)} | {f(ll, '{:.1f}')} | {f(calm, '{:.1f}')} | {f(tt / ll if tt and ll else None, '{:.2f}')} | {f(tt / calm if tt and calm else None, '{:.2f}')} |")
print()
for s in shapes:
    v = load(os.path.join(res, f"validate-{s}.json"))
    if v: print(f"- {s} parity against transformers' bf16 logits: min cosine {v['min_cosine']:.5f}, max |dlogit| {v['max_abs_diff']:.3f}, top-1 {v['top1_agreement']:.4f}, mean KL {v['mean_kl']:.2e}")
b = load(os.path.join(res, f"bench-{shapes[0]}.json")) or load(os.path.join(res, f"bench-{shapes[0]}-during-build.json"))
if b: print(f"- thintensor: {b.get('backend', '?')}, device copy {b['device_copy_gbs']:.0f} GB/s")
PY
cat "$OUT/small-summary.md" | tee -a "$log"
rm -rf "$work"
