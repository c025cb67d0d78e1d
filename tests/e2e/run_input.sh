#!/usr/bin/env bash
# Where `run` reads its prompt and how it ends its output: -f FILE, -f - (stdin), a piped stdin
# without --prompt; directories, devices, FIFOs given as archives and oversized files are refused
# at once; --json prints one JSON object; the output ends with exactly one newline; Ctrl-C stops
# generation with the statistics so far and exit code 130.
set -uo pipefail
source "$TT_SOURCE_DIR/tests/e2e/lib/common.sh"
ts="$S/models/tinystories-656k"
"$THINTENSOR" -q convert "$ts" -o "$tmp/ts.thin"
m="$tmp/ts.thin"
run() { "$THINTENSOR" run "$m" -t 0 -n 20 --device cpu "$@"; }

# Prompt sources: --prompt, -f FILE, -f -, a piped stdin; the text byte for byte (printf, not echo,
# so that no newline is added to the prompt).
run -p "Once upon a time" >"$tmp/p.txt" 2>/dev/null </dev/null
printf 'Once upon a time' >"$tmp/prompt.txt"
run -f "$tmp/prompt.txt" >"$tmp/f.txt" 2>/dev/null
check "-f FILE equals --prompt" cmp -s "$tmp/p.txt" "$tmp/f.txt"
printf 'Once upon a time' | run -f - >"$tmp/dash.txt" 2>/dev/null
check "-f - reads stdin" cmp -s "$tmp/p.txt" "$tmp/dash.txt"
printf 'Once upon a time' | run >"$tmp/pipe.txt" 2>"$tmp/pipe.err"
check "a piped stdin is the prompt" cmp -s "$tmp/p.txt" "$tmp/pipe.txt"
check "it says it read stdin" grep -q "reading the prompt from stdin" "$tmp/pipe.err"
run -f <(printf 'Once upon a time') >"$tmp/procsub.txt" 2>/dev/null
check "-f a pipe (process substitution)" cmp -s "$tmp/p.txt" "$tmp/procsub.txt"
run -p "Once upon a time
" >"$tmp/pnl.txt" 2>/dev/null </dev/null
echo "Once upon a time" | run >"$tmp/echo.txt" 2>/dev/null
check "a final newline of stdin is part of the prompt" cmp -s "$tmp/pnl.txt" "$tmp/echo.txt"
run -p "" >"$tmp/bos.txt" 2>/dev/null </dev/null
echo "Once upon a time" | run -p "" >"$tmp/bos2.txt" 2>"$tmp/bos2.err"
check "-p '' starts from BOS even with a piped stdin" cmp -s "$tmp/bos.txt" "$tmp/bos2.txt"
check "-p '' does not read stdin" bash -c "! grep -q 'reading the prompt from stdin' '$tmp/bos2.err'"
run >"$tmp/null.txt" 2>"$tmp/null.err" </dev/null
check "stdin /dev/null, no prompt: BOS" cmp -s "$tmp/bos.txt" "$tmp/null.txt"

# What is refused, at once (timeout: today's /dev/zero and FIFO read or block forever).
fails_with "-f DIR" "--prompt-file $tmp: is a directory" timeout 20 "$THINTENSOR" run "$m" -f "$tmp" --device cpu
fails_with "-f /dev/zero" "--prompt-file /dev/zero: is a character device" timeout 20 "$THINTENSOR" run "$m" -f /dev/zero --device cpu
truncate -s 65M "$tmp/huge.txt"
fails_with "-f of 65 MiB" "--prompt-file $tmp/huge.txt: 65.00 MiB is more than the 64.00 MiB" timeout 20 "$THINTENSOR" run "$m" -f "$tmp/huge.txt" --device cpu
fails_with "-f - of /dev/zero" "--prompt-file stdin: more than 64.00 MiB of input" timeout 60 "$THINTENSOR" run "$m" -f - --device cpu </dev/zero
fails_with "-f missing" "--prompt-file $tmp/none.txt: cannot open: No such file" "$THINTENSOR" run "$m" -f "$tmp/none.txt" --device cpu
mkfifo "$tmp/fifo.thin"
fails_with "inspect FIFO" "fifo.thin: is a FIFO \(named pipe\), not a regular file" timeout 20 "$THINTENSOR" inspect "$tmp/fifo.thin"
fails_with "verify FIFO" "fifo.thin: is a FIFO \(named pipe\), not a regular file" timeout 20 "$THINTENSOR" verify "$tmp/fifo.thin"
fails_with "inspect DIR" "$tmp: is a directory, not a regular file" timeout 20 "$THINTENSOR" inspect "$tmp"

# One trailing newline: added when the text does not end in one, not doubled when it does.
check "output ends in one newline" bash -c "[ \"\$(tail -c 1 '$tmp/p.txt' | od -An -c | tr -d ' ')\" = '\n' ]"
# The story from BOS has its first newline right before "While": stopping there, the text ends
# in its own newline, and no second one follows.
"$THINTENSOR" -q run "$m" -p "" -t 0 --stop While --device cpu </dev/null >"$tmp/nl.txt"
check "text ending in a newline gets no second one" python3 - "$tmp/nl.txt" "$ts/reference.json" <<'PY'
import json, sys
got = open(sys.argv[1], encoding="utf-8").read()
want = json.load(open(sys.argv[2]))["bos_story_text"]
sys.exit(0 if got == want[:want.index("While")] and got.endswith("with.\n") else 1)
PY

# --json: one object on stdout, the text unstreamed, the statistics beside it.
run -p "Once upon a time" --json >"$tmp/j.json" 2>"$tmp/j.err"; rc=$?
check "--json: exit 0" [ "$rc" -eq 0 ]
check "--json: one JSON object with the text and statistics" python3 - "$tmp/j.json" "$tmp/p.txt" <<'PY'
import json, sys
raw = open(sys.argv[1], encoding="utf-8").read()
assert raw.endswith("}\n") and raw.count("\n") == 1, repr(raw[-40:])
j = json.loads(raw)
text = open(sys.argv[2], encoding="utf-8").read()
assert j["text"] + "\n" == text, (j["text"], text)
assert j["stop_reason"] == "max tokens" and j["generated_tokens"] == 20 == len(j["tokens"]), j
assert j["prompt_tokens"] > 0 and j["decode_tokens_per_s"] > 0 and j["prefill_tokens_per_s"] > 0, j
assert j["sampling"]["temperature"] == 0, j
PY
check "--json: no statistics line on stderr" bash -c "! grep -q 'decode .* tok/s' '$tmp/j.err'"
"$THINTENSOR" run "$m" -p "Once" -t 1 --seed 7 -n 5 --json --device cpu >"$tmp/js.json" 2>/dev/null
check "--json: the seed of a sampled run" python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j['sampling']['seed']==7 else 1)" "$tmp/js.json"

# Ctrl-C: a copy of TinyStories with a long context and no EOS, so that generation runs long.
cp -r "$ts" "$tmp/long"
python3 - "$tmp/long" <<'PY'
import json, sys
d = sys.argv[1]
def edit(name, f):
    p = f"{d}/{name}"; j = json.load(open(p)); f(j); json.dump(j, open(p, "w"))
edit("config.json", lambda c: c.update(max_position_embeddings=16384, eos_token_id=0))
edit("generation_config.json", lambda c: c.update(eos_token_id=0))
edit("tokenizer_config.json", lambda c: c.update(eos_token="<unk>"))
PY
"$THINTENSOR" -q convert "$tmp/long" -o "$tmp/long.thin"
interrupt() {  # interrupt OUT ERR args...: starts run, waits for output, sends SIGINT; sets rc
  local out=$1 err=$2; shift 2
  set -m  # own process group: a background job of a script would otherwise ignore SIGINT
  "$THINTENSOR" -v run "$tmp/long.thin" -p "Once upon a time" -n 16000 -t 1 --seed 1 --device cpu "$@" >"$out" 2>"$err" &
  local pid=$!
  set +m
  # -v: "sampling: ..." is the last line before generation starts.
  for _ in $(seq 300); do grep -q "sampling: temperature" "$err" 2>/dev/null && break; sleep 0.1; done
  sleep 0.5
  kill -INT "$pid"
  wait "$pid"; rc=$?
}
interrupt "$tmp/int.txt" "$tmp/int.err"
check "Ctrl-C: exit 130" [ "$rc" -eq 130 ]
check "Ctrl-C: the statistics so far" grep -Eq "generated [0-9]+ tokens.*stop: interrupted" "$tmp/int.err"
check "Ctrl-C: the output ends in a newline" bash -c "[ \"\$(tail -c 1 '$tmp/int.txt' | od -An -c | tr -d ' ')\" = '\n' ]"
interrupt "$tmp/intj.json" "$tmp/intj.err" --json
check "Ctrl-C with --json: exit 130" [ "$rc" -eq 130 ]
check "Ctrl-C with --json: the object says interrupted" python3 -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j['stop_reason']=='interrupted' and 0 < j['generated_tokens'] < 16000 else 1)" "$tmp/intj.json"
finish
