#!/usr/bin/env bash
# The MoE benchmark in one GPU-machine call (about 9 minutes): a Qwen3-30B-A3B-shaped checkpoint with
# 16 of its 48 layers (random bf16 weights made by transformers, ~21 GB, per-expert tensors as on the
# hub), converted to .thin and to GGUF, then side by side in the same run:
#   ThinTensor   resident, --vram-budget 8GiB, 4GiB (bench --json; the expert cache's counters)
#   llama.cpp    resident (-ngl 99 -fa 1), and -ngl 99 --n-cpu-moe N at the N that fits 8 / 4 GiB
#   transformers resident (eager generate), and accelerate offload with max_memory 8 / 4 GiB
# each with its peak VRAM sampled by nvidia-smi every 200 ms, decode set against the active-bytes
# roofline (bench/moe_summary.py says how it is counted) and the cache's hit rate beside an LRU replay
# of Zipf-skewed routing.
#
# Inputs from CARRY_DIR (default .carry; bench/moe_stage.sh fills it here, the device call names it
# in `carry`): bin/thintensor (+ lib/ for the libraries the machine lacks), anchors/llama.cpp-src.tar.xz
# + anchors/build_llama.sh, tokenizers/qwen3/{tokenizer.json.xz,tokenizer_config.json}.
# Outputs in $OUT: moe-summary.md, moe-summary.json, moe.log, moe-results.tar.gz (every JSON, jsonl,
# VRAM trace and error log). A failing step is logged and the others go on; a step that would run
# past the deadline (MOE_DEADLINE_S, default 560 s from the start) is skipped and says so.
#
# usage: bench/moe_bench.sh [CARRY_DIR]
#   MOE_WORK (default /dev/shm/ttmoe): checkpoint, archives, llama.cpp build. HF checkpoint + .thin + GGUF
#   are 3 x 21 GB at most at once; the HF checkpoint goes once the last reader (accelerate) is done.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
repo=$PWD
carry=$(cd "${1:-.carry}" 2>/dev/null && pwd) || { echo "carry folder ${1:-.carry} not found (run bench/moe_stage.sh)"; exit 2; }
OUT="${OUT:-$PWD/moe-out}"; mkdir -p "$OUT"
work=${MOE_WORK:-/dev/shm/ttmoe}
res=$work/results
case "$work" in /|/dev/shm|/tmp|"$HOME"|"") echo "MOE_WORK=$work: give a folder of its own (it is emptied)"; exit 2;; esac
rm -rf "$work"; mkdir -p "$res" "$work/home"
export THINTENSOR_HOME="$work/home"
TT=$carry/bin/thintensor
# A folder staged by tests/gpu/stage.sh carries the binaries xz-compressed: unpack them first.
ck=$work/hf; arc=$work/moe.thin; gguf=$work/moe.gguf; lldir=$work/llama
shape=qwen3-30b-a3b-16l
deadline=${MOE_DEADLINE_S:-560}
t_start=$(date +%s)
log="$OUT/moe.log"
: >"$log"

# The machine lacks some libraries this build links: the carried copies (tests/gpu/libs.sh).
source "$repo/tests/gpu/libs.sh" >>"$log"

source "$repo/bench/lib/steps.sh"
gguf_running() { [ -n "${gguf_pid:-}" ] && kill -0 "$gguf_pid" 2>/dev/null; }

source "$repo/bench/lib/vram.sh"  # vram_start / vram_stop: $res/vram.tsv

finish() {
  trap - TERM INT
  [ -n "${vram_pid:-}" ] && kill "$vram_pid" 2>/dev/null
  say "=== summary"
  cp "$log" "$res/moe.log" 2>/dev/null
  timeout 60 python3 bench/moe_summary.py "$res" --md "$OUT/moe-summary.md" --json "$OUT/moe-summary.json" >>"$log" 2>&1 \
    || say "summary failed (see above)"
  cat "$OUT/moe-summary.md" 2>/dev/null
  df -h /dev/shm | tail -1 | tee -a "$log"
  cp "$log" "$res/moe.log" 2>/dev/null
  tar czf "$OUT/moe-results.tar.gz" -C "$work" results 2>/dev/null
  ls -l "$OUT"
  # Leave the machine's memory and disk as found: /dev/shm is RAM.
  rm -rf "$work"
}
trap 'say "interrupted"; finish; exit 1' TERM INT

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')"
  nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv,noheader
  nproc; free -g | head -2; df -h /dev/shm "$repo" | tail -2
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
  $TT --version 2>&1 | head -1
} >>"$log" 2>&1
say "work folder $work, carry $carry, deadline $deadline s"

# 1. llama.cpp: unpacked now (the converter is needed soon), built in the background at nice 15 so
#    that the measurements that run meanwhile keep their CPU.
run_step "llama.cpp build (background, nice 15)" nice -n 15 bash "$carry/anchors/build_llama.sh" "$carry/anchors/llama.cpp-src.tar.xz" "$lldir" --background

# 2. The checkpoint (GPU, bf16, per-expert tensors) + reference logits + transformers' resident speed.
vram_start hf-resident
run_step "checkpoint: random $shape (transformers init, bf16) + transformers resident speed" \
  timeout "$(cap 240)" python3 bench/hf_random_model.py "$shape" "$ck" "$res/hf-ckpt.json" --gen 16 --prefill 512
ck_rc=$?
vram_stop
if [ $ck_rc -ne 0 ] || [ ! -f "$ck/config.json" ]; then
  say "checkpoint step failed: nothing to measure"; finish; exit 1
fi
cp "$ck/config.json" "$res/config.json"
cp "$ck/reference.safetensors" "$work/reference.safetensors"
xz -dc "$carry/tokenizers/qwen3/tokenizer.json.xz" >"$ck/tokenizer.json" && cp "$carry/tokenizers/qwen3/tokenizer_config.json" "$ck/" \
  || say "tokenizer copy failed: both converters need it"
du -sh "$ck" | tee -a "$log"

# 3. Conversions: GGUF in the background (CPU only, ~4 min for 21 GB), .thin in the foreground.
say "=== GGUF conversion started in the background (nice 5): $res/gguf-convert.log"
( cd "$lldir/lltrim" && PYTHONPATH="$lldir/lltrim/gguf-py" nice -n 5 python3 convert_hf_to_gguf.py "$ck" --outtype bf16 --outfile "$gguf" \
    >"$res/gguf-convert.log" 2>&1; echo "GGUF_RC=$?" >>"$res/gguf-convert.log" ) &
gguf_pid=$!
run_step "thintensor convert --dtype bf16" timeout "$(cap 240)" sh -c "'$TT' convert '$ck' -o '$arc' --dtype bf16 --json >'$res/tt-convert.json'" \
  && tt_ok=1 || tt_ok=0
[ -f "$arc" ] && ls -l "$arc" | tee -a "$log"

# 4a. Ceilings measured now: device copy (the roofline) and host-to-device pinned (the PCIe bound).
if enough 40 "thintensor doctor"; then
  run_step "thintensor doctor --json" timeout "$(cap 90)" sh -c "'$TT' doctor --device 0 --cache-test-mib 0 --python-timeout 30 --json >'$res/doctor.json' 2>'$res/doctor.err'"
  python3 -c "import json,sys; g=json.load(open(sys.argv[1]))['gpus'][0]; print('doctor: d2d %.0f GB/s, h2d pinned %.1f GB/s, gemm %.0f TFLOP/s' % (g['d2d_gbs'], g['h2d_pinned_gbs'], g['gemm_bf16_tflops']))" \
    "$res/doctor.json" 2>&1 | tee -a "$log"
fi

# 4b. ThinTensor: parity against transformers, then resident and the two budgets.
if [ $tt_ok = 1 ]; then
  for key in logits_bf16 logits_f32; do
    # the f32 comparison only when there is time to spare: it is the second of two loads of 21 GB
    if [ $key = logits_f32 ]; then enough 380 "validate $key (optional)" || continue; else enough 60 "validate $key" || continue; fi
    run_step "thintensor validate vs transformers $key" timeout "$(cap 90)" sh -c \
      "'$TT' -q validate '$arc' --reference '$work/reference.safetensors' --key $key --device cuda --min-cosine 0.99 --json >'$res/tt-validate-$key.json'"
  done
  for b in resident 8GiB 4GiB; do
    flag=(); [ $b = resident ] || flag=(--vram-budget $b)
    # --random-decode: decode steps fed random ids, as llama-bench's tg test does (greedy decoding of
    # random weights repeats one token, and so one set of experts: a flattering hit rate).
    if [ $b = resident ]; then args=(--prompt-lengths 512,2048 --gen-tokens 128 --reps 3 --random-decode); ctx=2049
    else args=(--prompt-lengths 512 --gen-tokens 32 --reps 2 --random-decode); ctx=513; fi
    enough 60 "thintensor bench $b" || continue
    "$TT" plan "$arc" "${flag[@]}" --context $ctx --json >"$res/tt-plan-$b.json" 2>"$res/tt-plan-$b.err" \
      || say "plan $b failed: $(tail -1 "$res/tt-plan-$b.err")"
    vram_start "tt-$b"
    run_step "thintensor bench $b ${flag[*]} ${args[*]}" timeout "$(cap 150)" sh -c \
      "'$TT' bench '$arc' --device cuda ${flag[*]} ${args[*]} --json >'$res/tt-bench-$b.json' 2>'$res/tt-bench-$b.err'" \
      || { tail -3 "$res/tt-bench-$b.err" | tee -a "$log"; rm -f "$res/tt-bench-$b.json"; }
    vram_stop
    python3 - "$res/tt-bench-$b.json" <<'PY' 2>&1 | tee -a "$log"
import json, sys
b = json.load(open(sys.argv[1]))
for r in b.get("results", []):
    print(f"  {r.get('test')}: {r.get('tokens_per_s', 0):.1f} tok/s")
if b.get("expert_cache") is not None:
    print("  expert_cache:", json.dumps(b["expert_cache"]))
PY
  done
else
  say "thintensor convert failed: no ThinTensor measurements"
fi

# 4c/5. llama.cpp needs the GGUF and the build; transformers + accelerate needs the HF checkpoint.
#    Whichever is ready runs first: accelerate fills the wait for the build, llama.cpp (the anchor)
#    keeps ~130 s of the deadline reserved until it has run. Then the HF checkpoint goes.
llama_phase() {
  tail -3 "$res/gguf-convert.log" | tee -a "$log"
  tail -2 "$lldir/build.log" | tee -a "$log"
  cp "$lldir/build.log" "$res/llama-build.log" 2>/dev/null
  local lb=$lldir/lltrim/build/bin/llama-bench
  if ! { grep -q '^BUILD_RC=0' "$lldir/build.log" 2>/dev/null && [ -x "$lb" ] && grep -q '^GGUF_RC=0' "$res/gguf-convert.log"; }; then
    say "llama.cpp not measured: build $(grep -o 'BUILD_RC=[0-9]*' "$lldir/build.log" 2>/dev/null || echo 'not done'), GGUF $(grep -o 'GGUF_RC=[0-9]*' "$res/gguf-convert.log" 2>/dev/null || echo 'not done')"
    tail -20 "$lldir/build.log" >>"$log" 2>/dev/null
    return 1
  fi
  ls -l "$gguf" | tee -a "$log"
  if enough 45 "llama-bench resident"; then
    vram_start llama-resident
    run_step "llama-bench resident -ngl 99 -fa 1 -p 512,2048 -n 128 -r 3" timeout "$(cap 150)" sh -c \
      "'$lb' -m '$gguf' -ngl 99 -fa 1 -p 512,2048 -n 128 -r 3 -o jsonl >'$res/llama-resident.jsonl' 2>'$res/llama-resident.err'"
    vram_stop
  fi
  # --n-cpu-moe N keeps the experts of N layers in host memory. First guess from sizes: the GGUF
  # less N layers' experts less the token embedding (llama.cpp keeps it on the CPU) plus ~1 GiB of
  # CUDA context, KV and compute buffers must fit; then one step up if the peak is over the budget,
  # or one step down if another layer's experts would still fit.
  local layer_experts embd n_layers gsize b mib g p
  read -r layer_experts embd n_layers <<<"$(python3 -c "
import json; c = json.load(open('$res/config.json'))
e = c.get('num_experts') or c.get('num_local_experts')
print(e * 3 * c['hidden_size'] * c['moe_intermediate_size'] * 2, c['vocab_size'] * c['hidden_size'] * 2, c['num_hidden_layers'])")"
  gsize=$(stat -c %s "$gguf")
  declare -gA tries=() guess=()
  for b in 8GiB 4GiB; do
    mib=$(( ${b%GiB} * 1024 ))
    g=$(python3 -c "import math; print(max(0, min($n_layers, math.ceil(($gsize - $embd + 2**30 - $mib * 2**20) / $layer_experts))))")
    guess[$b]=$g
    enough 40 "llama-bench $b" && llama_offload $b "$g"
  done
  for b in 8GiB 4GiB; do  # the corrections, time permitting
    mib=$(( ${b%GiB} * 1024 )); g=${guess[$b]}
    p=$(echo "${tries[$b]:-}" | awk -F: '{print $2}' | tr -d ' ')
    [[ "$p" =~ ^[0-9]+$ ]] || continue
    if [ "$p" -gt "$mib" ] && [ "$g" -lt "$n_layers" ]; then
      enough 40 "llama-bench $b correction up" && llama_offload $b $(( g + 1 ))
    elif [ $(( p + layer_experts / 1048576 )) -le "$mib" ] && [ "$g" -gt 0 ]; then
      enough 40 "llama-bench $b correction down" && llama_offload $b $(( g - 1 ))
    fi
  done
  for b in 8GiB 4GiB; do
    python3 - "$b" "$(( ${b%GiB} * 1024 ))" "${guess[$b]:-}" "${tries[$b]:-}" "$res/llama-search-$b.json" <<'PY' | tee -a "$log"
import json, sys
b, mib, guess, tries, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split(), sys.argv[5]
t = []
for x in tries:
    n, p = x.split(":")
    t.append({"n": int(n), "peak_mib": int(p) if p.isdigit() else None, "fits": p.isdigit() and int(p) <= mib})
fit = [x for x in t if x["fits"]]
# The fewest layers on the CPU that fit; if none fitted, the one closest to fitting, marked so.
pick = min(fit, key=lambda x: x["n"]) if fit else (max(t, key=lambda x: x["n"]) if t else None)
json.dump({"budget": b, "budget_mib": mib, "guess": int(guess) if guess else None, "tries": t,
           "chosen": pick["n"] if pick else None, "fits": bool(pick and pick["fits"])}, open(out, "w"), indent=2)
print(f"llama.cpp {b}: tried {t}; chosen --n-cpu-moe {pick['n'] if pick else None}")
PY
  done
}
llama_offload() {  # llama_offload BUDGET N
  local b=$1 n=$2
  vram_start "llama-ncmoe$n-$b"
  last_peak_mib=
  run_step "llama-bench $b: -ngl 99 -fa 1 --n-cpu-moe $n -p 512 -n 32 -r 2" timeout "$(cap 120)" sh -c \
    "'$lldir/lltrim/build/bin/llama-bench' -m '$gguf' -ngl 99 -fa 1 --n-cpu-moe $n -p 512 -n 32 -r 2 -o jsonl >'$res/llama-ncmoe$n-$b.jsonl' 2>'$res/llama-ncmoe$n-$b.err'"
  vram_stop
  tries[$b]+="$n:${last_peak_mib:-?} "
}
accelerate_run() {  # accelerate_run BUDGET
  vram_start "hf-offload-$1"
  run_step "transformers + accelerate offload, max_memory {0: $1, cpu: 100GiB}" timeout "$(cap 120)" \
    python3 bench/hf_offload.py "$ck" "$1" "$res/hf-offload-$1.json" --gen 8 --max-time 30 --prefill 512
  vram_stop
}
llama_ready() { ! gguf_running && ! build_running; }
pending=(8GiB 4GiB); llama_done=0
while :; do
  if [ $llama_done = 0 ] && llama_ready; then
    llama_phase; llama_done=1
  elif [ ${#pending[@]} -gt 0 ]; then
    b=${pending[0]}; pending=("${pending[@]:1}")
    reserve=$(( llama_done ? 0 : 130 ))
    enough $(( 100 + reserve )) "accelerate offload $b" && accelerate_run "$b"
  elif [ $llama_done = 0 ]; then
    [ "$(left)" -gt 60 ] && { sleep 2; continue; }
    say "the llama.cpp build or the GGUF conversion is still running at the deadline: stopping the conversion"
    gguf_running && kill "$gguf_pid"
    llama_phase; llama_done=1
  else
    break
  fi
done
rm -rf "$ck"; say "HF checkpoint deleted; /dev/shm: $(df -h /dev/shm | awk 'NR==2 {print $3" used, "$4" free"}')"

finish
