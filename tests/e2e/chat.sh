#!/usr/bin/env bash
# `thintensor chat` used as a person uses it: through a pseudo-terminal (Debian python3's pty
# module), with TinyStories-656K and a small story template written here (the model has no chat
# template of its own). Two turns, /reset, /exit; in a second session a long reply stopped with
# Ctrl-C, the session going on after it, Ctrl-C at the prompt, Ctrl-D. Every reply is compared
# with an independent path: `run --chat` for a first turn, and `template` + `run --prompt-file`
# on the whole rendered conversation for a second turn (greedy, so the text must be identical).
# Then piped (non-terminal) input, `run --chat --system`, and the bad-input errors.
set -euo pipefail
: "${THINTENSOR:?}" "${TT_SHARED_DIR:?}" "${TT_BUILD_DIR:?}"
PY=/usr/bin/python3
work="$TT_BUILD_DIR/e2e-chat"
rm -rf "$work" && mkdir -p "$work"
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

model="$work/tinystories.thin"
"$THINTENSOR" -q convert "$TT_SHARED_DIR/models/tinystories-656k" -o "$model"
tmpl="$work/story.jinja"
# Turns are lines of one story; a system message opens it as a paragraph. (The newlines are
# expressions: trim_blocks would eat a newline written right after a block tag.)
printf '%s' '{% for m in messages %}{{ m.content }}{{ "\n\n" if m.role == "system" else "\n" }}{% endfor %}' > "$tmpl"
common=(--template "$tmpl" --temperature 0 --device cpu --threads 1)
U1="Once upon a time, there was a little cat named Tom."
U2="One day, Tom saw a big red ball."
U3="Once upon a time, there was a big dog named Max who liked to play."

# ---- references by other paths: run --chat (one turn), template + run (two turns)
ref() { "$THINTENSOR" -q run "$model" "$@" | "$PY" -c 'import sys; t=sys.stdin.read(); assert t.endswith("\n"); sys.stdout.write(t[:-1])'; }
ref --chat "${common[@]}" -n 30 -p "$U1" > "$work/r1.txt"
"$PY" - "$work/r1.txt" "$U1" "$U2" > "$work/turn2.json" <<'PYEOF'
import json, sys
r1 = open(sys.argv[1], encoding="utf-8").read()
print(json.dumps([{"role": "user", "content": sys.argv[2]}, {"role": "assistant", "content": r1},
                  {"role": "user", "content": sys.argv[3]}]))
PYEOF
"$THINTENSOR" -q template "$tmpl" --messages "$work/turn2.json" --add-generation-prompt > "$work/turn2.prompt"
ref --temperature 0 --device cpu --threads 1 -n 30 --prompt-file "$work/turn2.prompt" > "$work/r2.txt"
ref --chat "${common[@]}" -n 2000 -p "$U3" > "$work/r_long.txt"
[ -s "$work/r1.txt" ] && [ -s "$work/r2.txt" ] && ok || bad "empty reference replies"
echo "reference reply 1: $(cat "$work/r1.txt")"
echo "reference reply 2: $(cat "$work/r2.txt")"

# ---- the REPL through a pseudo-terminal
if "$PY" - "$THINTENSOR" "$model" "$tmpl" "$work" "$U1" "$U2" "$U3" <<'PYEOF'
import os, pty, re, select, signal, sys, termios, time
binary, model, tmpl, work, U1, U2, U3 = sys.argv[1:8]
ref = {k: open(f"{work}/{k}.txt", encoding="utf-8").read() for k in ("r1", "r2", "r_long")}
failures = []

class Session:
    def __init__(self, max_tokens):
        args = [binary, "chat", model, "--template", tmpl, "--temperature", "0", "--device", "cpu",
                "--threads", "1", "--max-tokens", str(max_tokens)]
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execv(binary, args)
        self.out = b""
        self.transcript = b""
        self.code = None

    def read(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if not r:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        self.out += data
        self.transcript += data
        return bool(data)

    def expect(self, pattern, timeout=60):
        """Reads until `pattern` (bytes regex) matches the unread output; returns the text before it."""
        deadline = time.time() + timeout
        while True:
            m = re.search(pattern, self.out, re.S)
            if m:
                before = self.out[:m.start()]
                self.out = self.out[m.end():]
                return before.decode("utf-8", "replace")
            left = deadline - time.time()
            if left <= 0 or (not self.read(left) and time.time() < deadline and self.closed()):
                raise TimeoutError(f"waiting for {pattern!r}; unread output: {self.out[-500:]!r}")

    def closed(self):
        """Whether the chat exited (reaps it; wait() returns its code)."""
        if self.code is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.code = os.waitstatus_to_exitcode(status)
        return self.code is not None

    def send(self, text, at_prompt=True):
        """Types text; at the prompt, first waits until the line editor has the terminal (echo
        off): the prompt is shown a moment before, and keys typed in between would be echoed by
        the terminal as well, and a Ctrl-D there would be a cooked-mode end of file."""
        deadline = time.time() + 10
        while at_prompt and termios.tcgetattr(self.fd)[3] & termios.ECHO:
            if time.time() > deadline:
                raise TimeoutError("the line editor never took the terminal (echo still on)")
            time.sleep(0.01)
        os.write(self.fd, text.encode())

    def turn(self, text):
        """Types a line and returns the reply printed before the next prompt."""
        self.expect(rb"> ")
        self.send(text + "\r")
        self.expect(re.escape(text.encode()) + rb"\r\n")   # the terminal's echo
        reply = self.expect(rb"\r\n> ")
        self.out = b"> " + self.out  # leave the prompt for the next expect
        return reply.replace("\r\n", "\n")

    def wait(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.read(0.1)
            if self.closed():
                return self.code
        os.kill(self.pid, signal.SIGKILL)
        raise TimeoutError(f"the chat did not exit; the end of its output: {self.transcript[-300:]!r}")

def check(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)

# Session A: two turns, /reset, the first turn again, /exit.
a = Session(30)
r1 = a.turn(U1)
check(r1 == ref["r1"], f"turn 1 equals run --chat: {r1!r} vs {ref['r1']!r}")
r2 = a.turn(U2)
check(r2 == ref["r2"], f"turn 2 equals run on the rendered conversation: {r2!r} vs {ref['r2']!r}")
a.expect(rb"> ")
a.send("/reset\r")
a.expect(rb"\(conversation cleared\)")
r3 = a.turn(U1)
check(r3 == ref["r1"], f"after /reset the first turn repeats: {r3!r}")
a.expect(rb"> ")
a.send("/exit\r")
rc = a.wait()
check(rc == 0, f"/exit exits 0 (got {rc})")
text = a.transcript.decode("utf-8", "replace")
check(text.count(U1) == 2 and text.count(U2) == 1, "the transcript holds both prompts (U1 twice)")
open(f"{work}/session_a.txt", "w", encoding="utf-8").write(text)

# Session B: a long reply stopped by Ctrl-C, the session goes on; Ctrl-C at the prompt; Ctrl-D.
b = Session(2000)
b.expect(rb"> ")
b.send(U3 + "\r")
b.expect(re.escape(U3.encode()) + rb"\r\n")
while len(b.out) < 8:  # the reply has started streaming
    b.read(30)
# Freeze the chat mid-reply (the whole reply takes ~0.1 s on this model), drain what it wrote
# (the terminal flushes unread output when it turns Ctrl-C into SIGINT), press Ctrl-C, wait until
# the terminal has handled it (its "^C" echo), and let the chat run again.
os.kill(b.pid, signal.SIGSTOP)
while b.read(0.2):
    pass
b.send("\x03", at_prompt=False)
b.expect(rb"\^C", timeout=10)
os.kill(b.pid, signal.SIGCONT)
partial = b.transcript.decode("utf-8", "replace").split(U3 + "\r\n", 1)[1].split("^C", 1)[0]
partial += b.expect(rb"\r\n\(reply stopped\)\r\n")
partial = partial.replace("\r\n", "\n")
text = b.transcript.decode("utf-8", "replace")
check("(reply stopped)" in text, "Ctrl-C says the reply stopped")
check(len(partial) > 0 and ref["r_long"].startswith(partial) and len(partial) < len(ref["r_long"]),
      f"the stopped reply is a proper prefix of the full one ({len(partial)} of {len(ref['r_long'])} chars)")
r = b.turn("Max ran to the park.")
check(len(r.strip()) > 0, f"the session goes on after Ctrl-C: {r[:60]!r}")
b.expect(rb"> ")
b.send("/reset\r")
b.expect(rb"\(conversation cleared\)")
r = b.turn(U3)
check(r == ref["r_long"], f"after /reset a full reply equals run --chat ({len(r)} chars)")
b.expect(rb"> ")
b.send("\x03")
b.expect(rb"/exit or Ctrl-D quits")
b.expect(rb"> ")
b.send("\x04")
rc = b.wait()
check(rc == 0, f"Ctrl-D at the prompt exits 0 (got {rc})")
open(f"{work}/session_b.txt", "w", encoding="utf-8").write(b.transcript.decode("utf-8", "replace"))
sys.exit(1 if failures else 0)
PYEOF
then ok; else bad "the pseudo-terminal session (transcripts in $work/session_*.txt)"; fi

# ---- piped input: no prompt, each reply on its own line, same replies
printf '%s\n%s\n' "$U1" "$U2" | "$THINTENSOR" -q chat "$model" "${common[@]}" -n 30 > "$work/piped.txt"
printf '%s\n%s\n' "$(cat "$work/r1.txt")" "$(cat "$work/r2.txt")" > "$work/piped_want.txt"
cmp -s "$work/piped.txt" "$work/piped_want.txt" && ok || bad "piped chat printed: $(cat "$work/piped.txt")"

# ---- run --chat --system: the system message goes through the template (compare with template + run)
"$PY" -c 'import json,sys; print(json.dumps([{"role":"system","content":sys.argv[1]},{"role":"user","content":sys.argv[2]}]))' \
  "Lily had a red kite." "One day, the wind was strong." > "$work/sys.json"
"$THINTENSOR" -q template "$tmpl" --messages "$work/sys.json" --add-generation-prompt > "$work/sys.prompt"
want=$(ref --temperature 0 --device cpu -n 30 --prompt-file "$work/sys.prompt")
got=$(ref --chat "${common[@]}" -n 30 --system "Lily had a red kite." -p "One day, the wind was strong.")
[ -n "$got" ] && [ "$got" = "$want" ] && ok || bad "run --chat --system printed '$got', want '$want'"

# ---- bad input: a clear message naming the problem, non-zero exit
expect_error() {  # expect_error PATTERN CMD...
  local pattern="$1"; shift
  set +e; local err; err=$("$@" 2>&1 < /dev/null >/dev/null); local rc=$?; set -e
  if [ "$rc" -ne 0 ] && echo "$err" | grep -q -- "$pattern"; then ok; else bad "expected exit!=0 and '$pattern' from '$*', got rc=$rc: $err"; fi
}
expect_error "$model: the model has no chat template.*--template" "$THINTENSOR" chat "$model" --device cpu
expect_error "$model: the model has no chat template.*--template" "$THINTENSOR" run "$model" --chat -p hi --device cpu
expect_error "$work/missing.jinja: no such file or directory" "$THINTENSOR" chat "$model" --template "$work/missing.jinja" --device cpu
printf '{%% for m in messages %%}{{ m.content }' > "$work/broken.jinja"
expect_error "broken.jinja:1:" "$THINTENSOR" chat "$model" --template "$work/broken.jinja" --device cpu
expect_error "\-\-system needs --chat" "$THINTENSOR" run "$model" --system hi -p hi --device cpu
expect_error "\-\-no-bos cannot be combined with --chat" "$THINTENSOR" run "$model" --chat --no-bos --template "$tmpl" -p hi --device cpu
expect_error "\-\-var novalue: expected key=value" "$THINTENSOR" chat "$model" --template "$tmpl" --var novalue --device cpu

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
