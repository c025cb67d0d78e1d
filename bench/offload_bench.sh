#!/usr/bin/env bash
# The issue #16 benchmark: decode layers that do not fit VRAM computed on the CPU beside those streamed
# over PCIe, against llama.cpp (which computes the layers it does not offload on the CPU) at the same
# peak VRAM. A Llama-3-8B-shaped checkpoint (random bf16 weights made by transformers, ~16 GB),
# converted to .thin and to GGUF, then for --vram-budget 8GiB and 4GiB and 16 and 8 threads:
#   ThinTensor  plan --json (the predicted decode, the layers on each path, bytes per token on each)
#               and bench --json (tg32, pp512, pp2048), peak VRAM by nvidia-smi every 200 ms
#   llama.cpp   llama-bench -ngl N -fa 1 at the N that fits the same peak VRAM (searched: an estimate
#               from the layer size, then corrected by the measured peak)
# and for reference ThinTensor resident and llama.cpp on the CPU alone (the host's effective read
# bandwidth). bench/offload_summary.py sets each figure beside its target and its bound.
#
# Two GPU-machine calls (one call is at most 600 s), chosen by STEPS, each under its own deadline
# (OFF_DEADLINE_S, default 560 s from the step's start; a step that would run past it is skipped and
# says so). The state stays in OFF_WORK (default /dev/shm/ttoff) between them, so the second call
# must come while the machine is still warm (within 30 s of the first one's end):
#   STEPS=setup  the llama.cpp build (in the background, its own session: it outlives the call),
#                the checkpoint, both conversions, then `thintensor doctor` once the machine is quiet
#                (GPU and host ceilings in $THINTENSOR_HOME/doctor.json, read by the planner)
#   STEPS=bench  every measurement, then the summary; OFF_WORK is removed at the end
# STEPS="setup bench" (the default) runs both in one go, for a machine without the 600 s limit.
# Expected: setup 6-8 min (the llama.cpp build, ~5-7 min in the background, is the long pole; the
# checkpoint ~1 min, .thin ~0.5 min, GGUF ~3 min beside it); bench 6-8 min (ThinTensor ~30 s a run,
# x4; llama-bench ~65 s at 8 GiB and ~90 s at 4 GiB a try, both thread counts; references ~45 s;
# the -ngl corrections only as time allows).
#
# Inputs from CARRY_DIR (default .carry; bench/offload_stage.sh fills it here, both device calls name
# it in `carry`): bin/thintensor (+ lib/), anchors/{llama.cpp-src.tar.xz,build_llama.sh},
# tokenizers/llama3/{tokenizer.json.xz,tokenizer_config.json}.
# Outputs in $OUT after each call: offload.log (every step so far), offload-summary.md,
# offload-summary.json, offload-results.tar.gz (every JSON, jsonl, VRAM trace and error log).
# A failing step is logged and the others go on.
#
# usage: STEPS=setup|bench bench/offload_bench.sh [CARRY_DIR]
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.." || exit 2
repo=$PWD
carry=$(cd "${1:-.carry}" 2>/dev/null && pwd) || { echo "carry folder ${1:-.carry} not found (run bench/offload_stage.sh)"; exit 2; }
OUT="${OUT:-$PWD/offload-out}"; mkdir -p "$OUT"
work=${OFF_WORK:-/dev/shm/ttoff}
case "$work" in /|/dev/shm|/tmp|"$HOME"|"") echo "OFF_WORK=$work: give a folder of its own (it is emptied)"; exit 2;; esac
res=$work/results
steps=" ${STEPS:-setup bench} "
export THINTENSOR_HOME="$work/home"
TT=$carry/bin/thintensor
# A folder staged by tests/gpu/stage.sh carries the binaries xz-compressed: unpack them first.
ck=$work/hf; arc=$work/a.thin; gguf=$work/m.gguf; lldir=$work/llama
lb=$lldir/lltrim/build/bin/llama-bench
deadline=${OFF_DEADLINE_S:-560}
budgets=(${OFF_BUDGETS:-8GiB 4GiB})
t_all=$(nproc); threads=(${OFF_THREADS:-$t_all $(( t_all / 2 ))})  # all cores, and half of them
ctx=2560       # the KV cache of the plan and of the budget runs alike (pp2048 + tg32 fit)
log="$OUT/offload.log"
summary=bench/offload_summary.py

# The machine lacks some libraries this build links: the carried copies (tests/gpu/libs.sh).
source "$repo/tests/gpu/libs.sh"

t_start=$(date +%s)
source "$repo/bench/lib/steps.sh"
# record NAME COMMAND: the command line behind a result file, quoted in the summary.
record() { printf '%s\t%s\t%s\n' "$1" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$2" >>"$res/commands.tsv"; }

source "$repo/bench/lib/vram.sh"  # vram_start / vram_stop / peak_of: $res/vram.tsv
source "$repo/bench/lib/ngl.sh"  # llama.cpp's -ngl search: ngl_limits, ngl_first_guess, ngl_next

finish() {  # finish KEEP: the summary and $OUT's files; OFF_WORK stays when KEEP=keep (for the next step)
  trap - TERM INT
  [ -n "${vram_pid:-}" ] && kill "$vram_pid" 2>/dev/null
  say "=== summary"
  timeout 60 python3 "$summary" "$res" --md "$OUT/offload-summary.md" --json "$OUT/offload-summary.json" >/dev/null 2>>"$log" \
    || say "summary failed (see above)"
  # (after setup alone the tables are still empty: the files are written, the log is spared them)
  [ "$1" = keep ] || tee -a "$log" <"$OUT/offload-summary.md" 2>/dev/null
  df -h /dev/shm | tail -1 | tee -a "$log"
  cp "$log" "$res/offload.log" 2>/dev/null
  tar czf "$OUT/offload-results.tar.gz" -C "$work" results 2>/dev/null
  ls -l "$OUT"
  if [ "$1" = keep ]; then
    cp "$log" "$work/offload.log"
    echo "state kept in $work for STEPS=bench: call again within 30 s (the machine goes back after that)"
  else
    # Leave the machine's memory and disk as found: /dev/shm is RAM.
    rm -rf "$work"
  fi
}

# thintensor doctor on a quiet machine: the GPU's ceilings and the host's (read bandwidth, GEMV rate
# by thread count), recorded in $THINTENSOR_HOME/doctor.json where plan and bench read them.
doctor() {
  run_step "thintensor doctor --json" timeout "$(cap 150)" sh -c \
    "'$TT' doctor --device 0 --cache-test-mib 0 --python-timeout 60 --json >'$res/doctor.json' 2>'$res/doctor.err'"
  record doctor "thintensor doctor --device 0 --cache-test-mib 0 --python-timeout 60 --json"
  cp "$THINTENSOR_HOME/doctor.json" "$res/doctor-record.json" 2>/dev/null || say "no $THINTENSOR_HOME/doctor.json written"
  python3 "$summary" --show-doctor "$res" 2>&1 | tee -a "$log"
}

# -------------------------------------------------------------------------------------------------
step_setup() {
  rm -rf "$work"; mkdir -p "$res" "$THINTENSOR_HOME"
  : >"$log"
  printf 'name\tbaseline_mib\tmax_mib\tpeak_mib\tsamples\n' >"$res/vram.tsv"
  printf 'budget\tn\tpeak_mib\trc\n' >"$res/llama-tries.tsv"
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')"
    nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv,noheader
    grep -m1 'model name' /proc/cpuinfo; nproc; free -g | head -2; df -h /dev/shm "$repo" | tail -2
    python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
    "$TT" --version 2>&1 | head -1
  } >>"$log" 2>&1
  python3 - "$res/meta.json" "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')" "$("$TT" --version 2>&1 | head -1)" <<'PY' 2>>"$log"
import json, os, subprocess, sys, time
def sh(c):
    try:
        return subprocess.run(c, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:
        return ""
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": sys.argv[2], "thintensor": sys.argv[3],
           "gpu": sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader -i 0"),
           "cpu": cpu, "nproc": os.cpu_count(), "mem_total_kib": sh("awk '/MemTotal/ {print $2}' /proc/meminfo")},
          open(sys.argv[1], "w"), indent=2)
PY
  say "setup: work folder $work, carry $carry, deadline $deadline s"

  # 1. llama.cpp: unpacked now (the converter is needed soon), built in its own session at nice 15.
  run_step "llama.cpp build (background, nice 15)" nice -n 15 bash "$carry/anchors/build_llama.sh" "$carry/anchors/llama.cpp-src.tar.xz" "$lldir" --background

  # 2. The checkpoint: transformers' init on the GPU, bf16, saved in shards (no speed runs, no f32 logits).
  run_step "checkpoint: random llama3-8b (transformers init, bf16)" \
    timeout "$(cap 240)" python3 bench/hf_random_model.py llama3-8b "$ck" "$res/hf-ckpt.json" --no-speed --no-f32
  if [ ! -f "$ck/config.json" ]; then say "checkpoint step failed: nothing to measure"; return 1; fi
  cp "$ck/config.json" "$res/config.json"
  rm -f "$ck/reference.safetensors"  # not used here; keeps the converters to the weights
  { xz -dc "$carry/tokenizers/llama3/tokenizer.json.xz" >"$ck/tokenizer.json" && cp "$carry/tokenizers/llama3/tokenizer_config.json" "$ck/"; } \
    || say "tokenizer copy failed: the GGUF converter needs it"
  du -sh "$ck" | tee -a "$log"

  # 3. Conversions: GGUF in the background (CPU only, single-threaded, ~3 min for 16 GB), .thin meanwhile.
  say "=== GGUF conversion started in the background (nice 5): $res/gguf-convert.log"
  : >"$res/gguf-convert.log"
  setsid nohup bash -c "cd '$lldir/lltrim' && PYTHONPATH='$lldir/lltrim/gguf-py' nice -n 5 python3 convert_hf_to_gguf.py '$ck' --outtype bf16 --outfile '$gguf'; echo GGUF_RC=\$?" \
    >>"$res/gguf-convert.log" 2>&1 </dev/null &
  record gguf "PYTHONPATH=lltrim/gguf-py python3 lltrim/convert_hf_to_gguf.py CKPT --outtype bf16 --outfile M.gguf"
  run_step "thintensor convert --dtype bf16" timeout "$(cap 240)" sh -c "'$TT' -q convert '$ck' -o '$arc' --dtype bf16 --json >'$res/tt-convert.json' 2>'$res/tt-convert.err'" \
    || tail -3 "$res/tt-convert.err" | tee -a "$log"
  record convert "thintensor -q convert CKPT -o A.thin --dtype bf16 --json"
  [ -f "$arc" ] && ls -l "$arc" | tee -a "$log"

  # 4. Wait for the conversion (then the HF checkpoint goes: /dev/shm is RAM) and the build; the doctor
  #    measures the host too, so it runs only once neither loads the CPU (else the bench step runs it).
  wait_quiet "the GGUF conversion and the llama.cpp build" $(( $(left) - 110 ))
  tail -2 "$res/gguf-convert.log" | tee -a "$log"
  if ! gguf_running; then rm -rf "$ck"; say "HF checkpoint deleted; /dev/shm: $(df -h /dev/shm | awk 'NR==2 {print $3" used, "$4" free"}')"; fi
  [ -f "$lldir/build.log" ] && tail -2 "$lldir/build.log" | tee -a "$log"
  if ! build_running && ! gguf_running; then
    enough 60 "thintensor doctor" && doctor
  else
    say "the build or the conversion still runs at the setup deadline: both go on; the bench step waits for them and runs the doctor"
  fi
  gguf_ok || gguf_running || say "GGUF conversion failed: llama.cpp will not be measured ($(tail -1 "$res/gguf-convert.log"))"
  build_ok || build_running || { say "llama.cpp build failed: llama.cpp will not be measured"; tail -20 "$lldir/build.log" >>"$log" 2>/dev/null; }
  touch "$work/setup.done"
}

# -------------------------------------------------------------------------------------------------
# ThinTensor at one budget and thread count: the plan, then bench with nvidia-smi beside it.
tt_run() {  # tt_run BUDGET THREADS
  local b=$1 t=$2 name="tt-$1-t$2"
  enough 60 "thintensor $b, $t threads" || return 1
  local flags="--vram-budget $b --threads $t --context $ctx"
  "$TT" plan "$arc" $flags --json >"$res/tt-plan-$b-t$t.json" 2>"$res/tt-plan-$b-t$t.err" \
    || say "plan $b t$t failed: $(tail -1 "$res/tt-plan-$b-t$t.err")"
  record "tt-plan-$b-t$t" "thintensor plan A.thin $flags --json"
  python3 "$summary" --show-plan "$res/tt-plan-$b-t$t.json" 2>&1 | tee -a "$log"
  vram_start "$name"
  run_step "thintensor bench $flags" timeout "$(cap 170)" sh -c \
    "'$TT' bench '$arc' --device cuda $flags --prompt-lengths 512,2048 --gen-tokens 32 --reps 2 --json >'$res/$name.json' 2>'$res/$name.err'" \
    || { tail -3 "$res/$name.err" | tee -a "$log"; }
  vram_stop
  record "$name" "thintensor bench A.thin --device cuda $flags --prompt-lengths 512,2048 --gen-tokens 32 --reps 2 --json"
  grep -E '^plan:|warn' "$res/$name.err" | head -5 | tee -a "$log"
  python3 "$summary" --show-bench "$res/$name.json" 2>&1 | tee -a "$log"
}

# llama.cpp at one -ngl N for a budget: both thread counts in one process (the model loads once).
layer_mib=416; nmax=33  # from config.json below; N counts the output layer too
declare -A l_target=() l_limit=() l_fit=() l_over=() l_next=()
llama_try() {  # llama_try BUDGET N: runs, then sets l_next[BUDGET] to the next N to try ("" = done)
  local b=$1 n=$2 name="llama-ngl$2-$1" p next
  local args="-ngl $n -fa 1 -p 512,2048 -n 32 -r 2 -t $(IFS=,; echo "${threads[*]}")"
  l_next[$b]=
  vram_start "$name"
  run_step "llama-bench $b: $args" timeout "$(cap 170)" sh -c "'$lb' -m '$gguf' $args -o jsonl >'$res/$name.jsonl' 2>'$res/$name.err'"
  local rc=$?
  vram_stop
  record "$name" "llama-bench -m M.gguf $args -o jsonl"
  p=$last_peak_mib
  printf '%s\t%s\t%s\t%s\n' "$b" "$n" "${p:-}" "$rc" >>"$res/llama-tries.tsv"
  python3 "$summary" --show-llama "$res/$name.jsonl" 2>&1 | tee -a "$log"
  [ $rc -eq 0 ] && [ -n "$p" ] || { say "llama.cpp $b: -ngl $n gave rc=$rc, peak '${p:-}': no further tries"; tail -3 "$res/$name.err" | tee -a "$log"; return 1; }
  next=$(ngl_next "$n" "$p" "${l_limit[$b]}" "$layer_mib" "$nmax" "${l_fit[$b]:-}" "${l_over[$b]:-}")
  l_next[$b]=$next
  if [ "$p" -le "${l_limit[$b]}" ]; then
    l_fit[$b]=$n
    if [ -n "$next" ]; then
      say "llama.cpp $b: -ngl $n peaks at $p MiB, $(( l_limit[$b] - p )) MiB under the ${l_limit[$b]} MiB limit: next try -ngl $next"
    else
      say "llama.cpp $b: -ngl $n fits ($p MiB of ${l_limit[$b]} MiB) and one more layer would not"
    fi
  else
    l_over[$b]=$n
    if [ -n "$next" ]; then
      say "llama.cpp $b: RETRY: -ngl $n peaks at $p MiB, over the ${l_limit[$b]} MiB limit (target + 2%): next try -ngl $next"
    elif [ -n "${l_fit[$b]:-}" ]; then
      say "llama.cpp $b: -ngl $n peaks at $p MiB, over the ${l_limit[$b]} MiB limit; -ngl ${l_fit[$b]} fitted: keep it"
    fi
  fi
}

step_bench() {
  t_start=$(date +%s)
  if [ ! -f "$work/setup.done" ] || [ ! -d "$res" ]; then
    echo "no state in $work: run STEPS=setup first, and this call within 30 s of its end (a fresh machine has an empty /dev/shm)" | tee -a "$log"
    return 1
  fi
  [ -f "$work/offload.log" ] && cat "$work/offload.log" >"$log"
  say "bench: work folder $work, deadline $deadline s, budgets ${budgets[*]}, threads ${threads[*]}"
  free -g | head -2 | tee -a "$log"; df -h /dev/shm | tail -1 | tee -a "$log"
  if [ ! -f "$arc" ]; then say "no $arc (the .thin conversion failed in setup): ThinTensor will not be measured"; fi

  # 1. Left over from setup if it ran out of time: the build, the conversion, the doctor.
  wait_quiet "the llama.cpp build and the GGUF conversion (measurements need a quiet CPU)" 240 \
    || say "still running after 240 s: measuring anyway (concurrency.tsv says which runs overlapped)"
  if [ -d "$ck" ] && ! gguf_running; then rm -rf "$ck"; say "HF checkpoint deleted"; fi
  [ -f "$res/doctor.json" ] || doctor
  python3 - "$res/config.json" <<'PY' >"$work/sizes.sh" 2>>"$log" && . "$work/sizes.sh"
import json, sys
c = json.load(open(sys.argv[1]))
h, nh, nkv, inter = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["intermediate_size"]
hd = c.get("head_dim") or h // nh
layer = (h * nh * hd + 2 * h * nkv * hd + nh * hd * h + 3 * h * inter + 2 * h) * 2  # bf16, norms included
print(f"layer_mib={layer // 2**20}; nmax={c['num_hidden_layers'] + 1}")
PY
  say "llama.cpp layer size $layer_mib MiB (bf16), -ngl at most $nmax (the output layer counts as one)"
  vram_idle=$(smi_used)
  say "idle VRAM reading: ${vram_idle:-?} MiB"
  local can_llama=1
  { build_ok && gguf_ok; } || { can_llama=0; say "llama.cpp not measured: build $(grep -o 'BUILD_RC=[0-9]*' "$lldir/build.log" 2>/dev/null || echo 'not done'), GGUF $(grep -o 'GGUF_RC=[0-9]*' "$res/gguf-convert.log" 2>/dev/null || echo 'not done')"; }
  [ $can_llama = 1 ] && ls -l "$gguf" | tee -a "$log"
  cp "$lldir/build.log" "$res/llama-build.log" 2>/dev/null
  printf 'budget\tbudget_mib\ttt_peak_mib\ttarget_mib\tlimit_mib\tguess\n' >"$res/llama-search.tsv"

  # 2. Per budget: ThinTensor at each thread count, then llama.cpp's first try at the same peak VRAM:
  #    the larger of the budget and ThinTensor's measured peak, 2% over it allowed. First guess from
  #    sizes: N layers of layer_mib over ~1.2 GiB of the rest (CUDA context, output head's share,
  #    KV, compute buffers; 8 GiB gave -ngl 16 at 8.1 GiB before).
  local b t p bmib tp g
  for b in "${budgets[@]}"; do
    [ -f "$arc" ] && for t in "${threads[@]}"; do tt_run "$b" "$t"; done
    [ $can_llama = 1 ] || continue
    bmib=$(( ${b%GiB} * 1024 )); tp=0
    for t in "${threads[@]}"; do p=$(peak_of "tt-$b-t$t"); [ -n "$p" ] && [ "$p" -gt "$tp" ] && tp=$p; done
    read -r l_target[$b] l_limit[$b] <<<"$(ngl_limits "$bmib" "$tp")"
    g=$(ngl_first_guess "${l_target[$b]}" "$layer_mib" "$nmax")
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$b" "$bmib" "$tp" "${l_target[$b]}" "${l_limit[$b]}" "$g" >>"$res/llama-search.tsv"
    say "llama.cpp $b: target peak ${l_target[$b]} MiB (budget $bmib, ThinTensor ${tp:-?}), limit ${l_limit[$b]} MiB; first guess -ngl $g"
    enough 100 "llama-bench $b -ngl $g" && llama_try "$b" "$g"
  done

  # 3. References: ThinTensor resident; llama.cpp on the CPU alone (the host's effective read rate).
  if [ -f "$arc" ] && enough 40 "thintensor resident"; then
    vram_start tt-resident
    run_step "thintensor bench resident" timeout "$(cap 120)" sh -c \
      "'$TT' bench '$arc' --device cuda --prompt-lengths 512 --gen-tokens 32 --reps 2 --json >'$res/tt-resident.json' 2>'$res/tt-resident.err'" \
      || tail -3 "$res/tt-resident.err" | tee -a "$log"
    vram_stop
    record tt-resident "thintensor bench A.thin --device cuda --prompt-lengths 512 --gen-tokens 32 --reps 2 --json"
    python3 "$summary" --show-bench "$res/tt-resident.json" 2>&1 | tee -a "$log"
  fi
  if [ $can_llama = 1 ] && enough 45 "llama-bench CPU only"; then
    note_concurrency llama-cpu
    run_step "llama-bench CPU only: -ngl 0 -fa 1 -p 0 -n 16 -r 2 -t $t_all" timeout "$(cap 120)" sh -c \
      "'$lb' -m '$gguf' -ngl 0 -fa 1 -p 0 -n 16 -r 2 -t $t_all -o jsonl >'$res/llama-cpu.jsonl' 2>'$res/llama-cpu.err'" \
      || tail -3 "$res/llama-cpu.err" | tee -a "$log"
    record llama-cpu "llama-bench -m M.gguf -ngl 0 -fa 1 -p 0 -n 16 -r 2 -t $t_all -o jsonl"
    python3 "$summary" --show-llama "$res/llama-cpu.jsonl" 2>&1 | tee -a "$log"
  fi

  # 4. llama.cpp's corrections, time permitting: up to two more tries per budget.
  for _ in 1 2; do
    for b in "${budgets[@]}"; do
      [ -n "${l_next[$b]:-}" ] || continue
      enough 100 "llama-bench $b correction -ngl ${l_next[$b]}" && llama_try "$b" "${l_next[$b]}"
    done
  done
  for b in "${budgets[@]}"; do
    [ -n "${l_next[$b]:-}" ] && say "llama.cpp $b: search stopped before -ngl ${l_next[$b]} (tries used up or no time)"
  done
  return 0
}

# -------------------------------------------------------------------------------------------------
trap 'say "interrupted"; finish drop; exit 1' TERM INT
rc=0
if [[ $steps == *" setup "* ]]; then
  step_setup || rc=1
  if [ $rc = 1 ]; then finish drop; exit 1; fi
  if [[ $steps != *" bench "* ]]; then finish keep; exit 0; fi
fi
if [[ $steps == *" bench "* ]]; then
  step_bench || rc=1
  [ -d "$res" ] && finish drop
fi
exit $rc
