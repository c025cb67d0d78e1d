# Step helpers shared by the benchmark scripts that run inside one GPU-machine call against a
# deadline (bench/moe_bench.sh, offload_bench.sh, arch_bench.sh, quant_bench.sh, depth_bench.sh,
# serve_bench.sh). The caller sets t_start (date +%s), deadline (seconds from t_start) and log (a file) before using them.
elapsed() { echo $(( $(date +%s) - t_start )); }
left() { echo $(( deadline - $(elapsed) )); }
say() { printf '[%s +%4ss] %s\n' "$(date -u +%H:%M:%S)" "$(elapsed)" "$*" | tee -a "$log"; }
# cap N: a timeout of N seconds, or less so that the summary still fits before the deadline.
cap() { local l=$(( $(left) - 20 )); l=$(( l < 5 ? 5 : l )); echo $(( $1 < l ? $1 : l )); }
# enough N WHAT: true when at least N seconds are left; otherwise logs the skip.
enough() { if [ "$(left)" -ge "$1" ]; then return 0; fi; say "SKIPPED $2: $(left) s left before the deadline, it needs ~$1 s"; return 1; }
# run_header: the run's first lines in the log: date and commit, the GPU, the CPU, the reference's
# versions (the caller's $repo is the checkout).
run_header() {
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    grep -m1 'model name' /proc/cpuinfo; nproc
    python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
  } >>"$log" 2>&1
}
# run_step NAME CMD...: runs, logs exit status and duration; output goes to the log.
run_step() {
  local name=$1; shift
  local t0=$(date +%s)
  say "=== $name"
  "$@" >>"$log" 2>&1
  local rc=$?
  say "--- $name: rc=$rc in $(( $(date +%s) - t0 )) s"
  return $rc
}

# The llama.cpp anchor's background jobs (anchors/build_llama.sh --background into $lldir, the
# HF -> GGUF conversion logging into $res/gguf-convert.log and writing $gguf): running, and done
# with success. A script that runs the conversion otherwise redefines gguf_running after this.
build_running() { [ -f "$lldir/build.log" ] && ! grep -q '^BUILD_RC=' "$lldir/build.log"; }
gguf_running() { [ -f "$res/gguf-convert.log" ] && ! grep -q '^GGUF_RC=' "$res/gguf-convert.log"; }
build_ok() { grep -q '^BUILD_RC=0' "$lldir/build.log" 2>/dev/null && [ -x "$lldir/lltrim/build/bin/llama-bench" ]; }
gguf_ok() { grep -q '^GGUF_RC=0' "$res/gguf-convert.log" 2>/dev/null && [ -s "$gguf" ]; }
# wait_quiet WHAT SECONDS: waits (at most SECONDS) for the build and the conversion to end; non-zero
# when one still runs.
wait_quiet() {
  local until=$(( $(elapsed) + $2 ))
  if build_running || gguf_running; then say "waiting up to $2 s for $1: build $(build_running && echo running || echo 'done'), GGUF $(gguf_running && echo running || echo 'done')"; fi
  while { build_running || gguf_running; } && [ "$(elapsed)" -lt "$until" ]; do sleep 2; done
  ! build_running && ! gguf_running
}
# note_concurrency NAME: which of those jobs ran while measurement NAME ran ($res/concurrency.tsv).
note_concurrency() {
  local c=""
  build_running && c+=$'\tbuild'
  gguf_running && c+=$'\tgguf'
  printf '%s%s\n' "$1" "$c" >>"$res/concurrency.tsv"
}

# llama3_8b_setup: the start of a benchmark against llama.cpp on the Llama-3-8B shape (the caller
# sets carry, work, res, ck, lldir, gguf and TT): llama.cpp's build in the background (unless
# LLAMA=0), transformers' random checkpoint with its 512-token reference logits (moved to
# $work/reference.safetensors), the Llama-3 tokenizer beside it, its bf16 GGUF in the background,
# and ThinTensor's bf16 archive $work/bf16.thin. Non-zero when the checkpoint could not be made.
llama3_8b_setup() {
  [ "${LLAMA:-1}" = 0 ] && say "LLAMA=0: llama.cpp is not built, converted or measured in this run"
  [ "${LLAMA:-1}" = 0 ] || run_step "llama.cpp build (background, nice 15)" nice -n 15 bash "$carry/anchors/build_llama.sh" "$carry/anchors/llama.cpp-src.tar.xz" "$lldir" --background
  run_step "checkpoint: random llama3-8b (transformers init, bf16) and its 512-token reference logits" \
    timeout "$(cap 200)" python3 bench/hf_random_model.py llama3-8b "$ck" "$res/hf-ckpt.json" --ref-len 512 --no-speed --no-f32
  [ -f "$ck/config.json" ] || { say "checkpoint step failed: nothing to measure"; return 1; }
  { xz -dc "$carry/tokenizers/llama3/tokenizer.json.xz" >"$ck/tokenizer.json" && cp "$carry/tokenizers/llama3/tokenizer_config.json" "$ck/"; } || say "tokenizer copy failed"
  mv "$ck/reference.safetensors" "$work/reference.safetensors"
  [ "${LLAMA:-1}" = 0 ] || { say "=== GGUF conversion started in the background: $res/gguf-convert.log"; : >"$res/gguf-convert.log"; }
  [ "${LLAMA:-1}" = 0 ] || setsid nohup bash -c "while [ ! -f '$lldir/lltrim/convert_hf_to_gguf.py' ]; do sleep 1; done; cd '$lldir/lltrim' && PYTHONPATH='$lldir/lltrim/gguf-py' python3 convert_hf_to_gguf.py '$ck' --outtype bf16 --outfile '$gguf'; echo GGUF_RC=\$?" \
    >>"$res/gguf-convert.log" 2>&1 </dev/null &
  run_step "convert --dtype bf16" timeout "$(cap 120)" "$TT" -q convert "$ck" -o "$work/bf16.thin" --dtype bf16
}
