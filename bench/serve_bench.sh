#!/usr/bin/env bash
# Issue #20's benchmark: `thintensor serve` on the Llama-3-8B shape (a random-weight checkpoint made
# by transformers, bf16) under 1, 4, 16 and 64 concurrent streaming clients (bench/serve_load.py),
# beside `thintensor bench`'s tg128 on the same archive, in one GPU-machine call.
# Inputs in CARRY_DIR (default .carry): bin/thintensor (+ lib/), tokenizers/llama3
# (tokenizer.json.xz, tokenizer_config.json). Outputs in $OUT: s20.log, s20-summary.md, the JSON of
# every measurement, the server's log and its /metrics after each load. ARCHIVE=path measures that
# archive instead of making a checkpoint.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.." || exit 2
repo=$PWD
carry=$(cd "${1:-.carry}" 2>/dev/null && pwd) || { echo "carry folder ${1:-.carry} not found"; exit 2; }
OUT="${OUT:-$PWD/s20-out}"; mkdir -p "$OUT"
work=${BENCH_WORK:-/dev/shm/s20}
case "$work" in /|/dev/shm|/tmp|"$HOME"|"") echo "BENCH_WORK=$work: give a folder of its own (it is emptied)"; exit 2;; esac
export THINTENSOR_HOME="$work/home"
TT=$carry/bin/thintensor
ck=$work/hf
deadline=${BENCH_DEADLINE_S:-560}
log="$OUT/s20.log"
source "$repo/tests/gpu/libs.sh"
t_start=$(date +%s)
source "$repo/bench/lib/steps.sh"
port=${SERVE_PORT:-18080}
slots=${SLOTS:-64}
tokens=${MAX_TOKENS:-128}

rm -rf "$work"; mkdir -p "$work/home" "$OUT/res"
run_header
if [ -n "${ARCHIVE:-}" ]; then
  # An archive of the same checkpoint made by another benchmark of this call (bench/depth_bench.sh's).
  [ -f "$ARCHIVE" ] || { say "ARCHIVE=$ARCHIVE not found"; exit 1; }
  say "=== archive $ARCHIVE (made earlier in this call)"
  ln -s "$ARCHIVE" "$work/bf16.thin"
else
  run_step "checkpoint: random llama3-8b (transformers init, bf16)" \
    timeout "$(cap 200)" python3 bench/hf_random_model.py llama3-8b "$ck" "$OUT/res/hf-ckpt.json" --ref-len 16 --no-speed --no-f32
  [ -f "$ck/config.json" ] || { say "checkpoint step failed: nothing to measure"; exit 1; }
  xz -dc "$carry/tokenizers/llama3/tokenizer.json.xz" >"$ck/tokenizer.json" && cp "$carry/tokenizers/llama3/tokenizer_config.json" "$ck/"
  rm -f "$ck/reference.safetensors"
  run_step "convert --dtype bf16" timeout "$(cap 120)" "$TT" -q convert "$ck" -o "$work/bf16.thin" --dtype bf16
  rm -rf "$ck"
fi
run_step "thintensor bench bf16 (tg128)" timeout "$(cap 60)" \
  sh -c "'$TT' bench '$work/bf16.thin' --device cuda --prompt-lengths 0 --gen-tokens $tokens --reps 3 --json >'$OUT/res/bench-bf16.json'"

say "=== serve --parallel $slots"
TT_BATCH_TIMING=1 "$TT" serve "$work/bf16.thin" --device cuda --parallel "$slots" --queue 64 --ctx-size 512 --port "$port" >"$OUT/res/serve.log" 2>&1 &
srv=$!
up=0
for _ in $(seq 1 240); do
  python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=1)" 2>/dev/null && { up=1; break; }
  kill -0 $srv 2>/dev/null || break
  sleep 0.5
done
[ $up = 1 ] || { say "server did not come up"; tail -20 "$OUT/res/serve.log" | tee -a "$log"; kill $srv 2>/dev/null; exit 1; }
metrics() { python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/metrics').read().decode())" >"$OUT/res/metrics-$1.txt"; }
run_step "warm-up: 4 clients, 8 tokens" python3 bench/serve_load.py "http://127.0.0.1:$port" --clients 4 --max-tokens 8
metrics warm
for c in 1 4 16 64; do
  [ "$c" -le "$slots" ] || continue
  enough 40 "load with $c clients" || break
  run_step "load: $c clients, $tokens tokens each" sh -c "python3 bench/serve_load.py 'http://127.0.0.1:$port' --clients $c --max-tokens $tokens >'$OUT/res/load-$c.json'"
  cat "$OUT/res/load-$c.json" >>"$log"
  metrics "$c"
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader >"$OUT/res/smi-$c.txt" 2>&1
done
kill -TERM $srv; wait $srv; say "serve exited with $?"
python3 - "$OUT" "$tokens" <<'PY' | tee "$OUT/s20-summary.md"
import json, os, re, sys
out, tokens = sys.argv[1], int(sys.argv[2])
res = os.path.join(out, "res")
def metric(name, tag):
    p = os.path.join(res, f"metrics-{tag}.txt")
    if not os.path.exists(p): return None
    m = re.search(rf"^{name} (\S+)$", open(p).read(), re.M)
    return float(m.group(1)) if m else None
tg = None
try:
    b = json.load(open(os.path.join(res, "bench-bf16.json")))
    rows = b.get("results", b if isinstance(b, list) else [])
    for r in rows:
        if r.get("test", "").startswith("tg") or r.get("n_gen"):
            tg = r.get("tokens_per_s") or r.get("avg_ts") or r.get("tok_s"); break
except Exception as e:
    print("bench JSON unreadable:", e)
print(f"bench tg{tokens}: {tg} tok/s\n")
print("| clients | aggregate tok/s | sum of streams' decode tok/s | mean batch | backend ms / step | token handling ms / step | TTFT p50 / p99 ms | per-token p50 / p99 ms | failed |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
prev = "warm"; single = None; ratio16 = None
for c in (1, 4, 16, 64):
    p = os.path.join(res, f"load-{c}.json")
    if not os.path.exists(p): continue
    try: r = json.load(open(p))
    except Exception: print(f"| {c} | (unreadable) |"); continue
    s0, s1 = metric("thintensor_decode_steps_total", prev), metric("thintensor_decode_steps_total", c)
    r0, r1 = metric("thintensor_decode_rows_total", prev), metric("thintensor_decode_rows_total", c)
    batch = (r1 - r0) / (s1 - s0) if None not in (s0, s1, r0, r1) and s1 > s0 else None
    def per_step(name):
        a, b = metric(name, prev), metric(name, c)
        return 1e3 * (b - a) / (s1 - s0) if None not in (a, b, s0, s1) and s1 > s0 else None
    step_ms, handle_ms = per_step("thintensor_decode_step_seconds_total"), per_step("thintensor_token_handling_seconds_total")
    prev = c
    if c == 1: single = r.get("decode_tok_s_sum")
    f = lambda v, d=1: "-" if v is None else f"{v:.{d}f}"
    print(f"| {c} | {f(r.get('aggregate_tok_s'))} | {f(r.get('decode_tok_s_sum'))} | {f(batch, 2)} | {f(step_ms, 2)} | {f(handle_ms, 2)} | {f(r.get('ttft_p50_ms'))} / {f(r.get('ttft_p99_ms'))} "
          f"| {f(r.get('token_latency_p50_ms'), 2)} / {f(r.get('token_latency_p99_ms'), 2)} | {r.get('failed')} |")
    if c == 16 and single: ratio16 = r.get('decode_tok_s_sum') / single
print()
if ratio16: print(f"16 streams / 1 stream (sum of streams' decode tok/s): {ratio16:.2f}x")
if single and tg: print(f"single stream through serve / bench tg{tokens}: {single / tg:.3f}")
PY
grep "batched decode:" "$OUT/res/serve.log" | tail -8 | tee -a "$OUT/s20-summary.md"
rm -rf "$work"
