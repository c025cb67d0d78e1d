#!/usr/bin/env bash
# Interrupted writes leave no temporary file (issue 14): `convert` killed by SIGINT, SIGTERM or
# SIGHUP mid-way removes its "<out>.tmp.<pid>.XXXXXX" and dies by that signal (exit 128+N), and so
# does `run DIR` during its first-use conversion into the cache. SIGKILL cannot be caught: its
# temporary file stays, and is swept by the next use, which removes only files no live process
# holds (a live writer's flock, or an unlocked file of a live pid younger than the grace period).
set -uo pipefail
# Job control: without it, background jobs of a script start with SIGINT ignored (POSIX), and an
# ignored SIGINT is rightly left ignored by thintensor.
set -m
source "$TT_SOURCE_DIR/tests/e2e/lib/common.sh"
T="$THINTENSOR"

# A checkpoint big enough (~400 MB of f32) that a conversion takes long enough to be interrupted:
# TinyStories-656K's config and tokenizer with wider, deeper layers of finite values.
BIG="$tmp/big"; mkdir -p "$BIG"
cp "$S/models/tinystories-656k/"{tokenizer.json,tokenizer_config.json,special_tokens_map.json} "$BIG/"
python3 - "$S/models/tinystories-656k/config.json" "$BIG" <<'PY'
import json, struct, sys
cfg = json.load(open(sys.argv[1]))
H, F, L, V, NH, NKV = 1024, 4096, 6, cfg["vocab_size"], 16, 8
cfg.update(hidden_size=H, intermediate_size=F, num_hidden_layers=L, num_attention_heads=NH, num_key_value_heads=NKV)
json.dump(cfg, open(sys.argv[2] + "/config.json", "w"))
hd = H // NH
shapes = [("model.embed_tokens.weight", [V, H]), ("model.norm.weight", [H])]
for i in range(L):
    p = "model.layers.%d." % i
    shapes += [(p + "input_layernorm.weight", [H]), (p + "post_attention_layernorm.weight", [H]),
               (p + "self_attn.q_proj.weight", [NH * hd, H]), (p + "self_attn.k_proj.weight", [NKV * hd, H]),
               (p + "self_attn.v_proj.weight", [NKV * hd, H]), (p + "self_attn.o_proj.weight", [H, NH * hd]),
               (p + "mlp.gate_proj.weight", [F, H]), (p + "mlp.up_proj.weight", [F, H]), (p + "mlp.down_proj.weight", [H, F])]
header, off = {}, 0
for name, shape in shapes:
    n = 4
    for d in shape: n *= d
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + n]}
    off += n
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
chunk = struct.pack("<4096f", *[((i * 37) % 101 - 50) * 1e-3 for i in range(4096)])
with open(sys.argv[2] + "/model.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    for name, _ in shapes:
        a, b = header[name]["data_offsets"]
        n = b - a
        while n > 0:
            m = min(n, len(chunk)); f.write(chunk[:m]); n -= m
PY
check "the big checkpoint exists" [ -s "$BIG/model.safetensors" ]

# wait_for_temp DIR: until a temporary file with bytes in it appears in DIR (at most 60 s).
wait_for_temp() {
    for _ in $(seq 3000); do
        for f in "$1"/*.tmp.*; do [ -s "$f" ] && return 0; done
        sleep 0.02
    done
    return 1
}
temps() { find "$1" -name '*.tmp.*' | wc -l; }
signum() { kill -l "$1"; }

# 1. convert interrupted by each catchable signal: no temporary file, no output, the signal's status.
OUT="$tmp/out"; mkdir -p "$OUT"
for sig in INT TERM HUP; do
    "$T" convert "$BIG" -o "$OUT/big.thin" >"$tmp/conv.out" 2>"$tmp/conv.err" &
    pid=$!
    check "convert ($sig): a temporary file appears" wait_for_temp "$OUT"
    kill -"$sig" "$pid"; wait "$pid"; rc=$?
    check "convert killed by SIG$sig exits with 128+$(signum "$sig") (got $rc)" [ "$rc" = $((128 + $(signum "$sig"))) ]
    check "convert killed by SIG$sig leaves no temporary file" [ "$(temps "$OUT")" = 0 ]
    check "convert killed by SIG$sig leaves no archive" [ ! -e "$OUT/big.thin" ]
done

# 2. run DIR, interrupted with Ctrl-C during its first-use conversion into the cache.
H1="$tmp/h1"
THINTENSOR_HOME="$H1" "$T" run "$BIG" -p "Once" --max-tokens 1 --device cpu >/dev/null 2>"$tmp/run.err" &
pid=$!
mkdir -p "$H1/archives"
check "run DIR: converting into the cache" wait_for_temp "$H1/archives"
kill -INT "$pid"; wait "$pid"; rc=$?
check "run DIR killed by SIGINT exits with 130 (got $rc)" [ "$rc" = 130 ]
check "run DIR killed by SIGINT leaves no temporary file in the cache" [ "$(temps "$H1")" = 0 ]

# 3. SIGKILL: the temporary file stays (nothing can remove it then)...
H2="$tmp/h2"; mkdir -p "$H2/archives"
THINTENSOR_HOME="$H2" "$T" run "$BIG" -p "Once" --max-tokens 1 --device cpu >/dev/null 2>&1 &
pid=$!
check "run DIR (to be killed): converting" wait_for_temp "$H2/archives"
kill -KILL "$pid"; wait "$pid" 2>/dev/null
check "SIGKILL leaves its temporary file" [ "$(temps "$H2")" = 1 ]
killed=$(ls "$H2/archives/"*.tmp.*)
# ...beside files of live writers that a sweep must keep: one a live process holds locked (its
# name has a dead pid, as another pid namespace sharing the folder would give), one unlocked but
# of a live pid and fresh (a writer between creating and locking it).
dead_pid=$(sh -c 'echo $$')
held="$H2/archives/other.thin.tmp.$dead_pid.AbCdEf"; : >"$held"
flock -x "$held" sleep 120 </dev/null >/dev/null 2>&1 & holder=$!  # its own process group (set -m)
fresh="$H2/archives/mine.thin.tmp.$$.XyZ123"; : >"$fresh"
stale="$H2/archives/old.thin.tmp.$dead_pid.Q1w2E3"; echo x >"$stale"
sleep 0.3
# The next use of the cache sweeps: the killed conversion's file and the unlocked dead-pid file go.
THINTENSOR_HOME="$H2" "$T" run "$S/models/tinystories-656k" -p "Once" --max-tokens 2 --device cpu >/dev/null 2>"$tmp/sweep.err"
check "the next run succeeds" [ $? = 0 ]
check "the SIGKILLed conversion's temporary file is swept" [ ! -e "$killed" ]
check "an unlocked temporary file of a dead pid is swept" [ ! -e "$stale" ]
check "the sweep says what it removed" grep -q "removed .*tmp.* (left by an interrupted conversion)" "$tmp/sweep.err"
check "a temporary file a live process holds is kept" [ -e "$held" ]
check "a fresh unlocked temporary file of a live pid is kept" [ -e "$fresh" ]
kill -- -"$holder" 2>/dev/null; wait "$holder" 2>/dev/null

# 4. convert sweeps the leftovers of a killed convert to the same output path.
"$T" convert "$S/models/tinystories-656k" -o "$OUT/small.thin" >/dev/null 2>&1 &
: >"$OUT/small.thin.tmp.$dead_pid.ZZZZZZ"
wait $!
check "convert succeeds" [ -s "$OUT/small.thin" ]
check "convert swept the dead writer's temporary file of its output" [ "$(temps "$OUT")" = 0 ]
finish
