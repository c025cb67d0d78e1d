#!/usr/bin/env bash
# The CLI's contract: --help lists the commands and exits 0; every usage error exits 2 (whatever
# CLI11's own code was) with one "error:" line naming the cause; an unknown command is named, with
# the commands listed.
set -uo pipefail
source "$TT_SOURCE_DIR/tests/e2e/lib/common.sh"
exits() {  # exits "what" CODE "stderr regex" command...
  local what=$1 want=$2 re=$3 rc; shift 3
  "$@" >"$tmp/o" 2>"$tmp/e"; rc=$?
  if [ "$rc" -ne "$want" ]; then failed=$((failed+1)); echo "FAIL: $what: exit $rc, want $want"; cat "$tmp/e"; return; fi
  if grep -Eq -e "$re" "$tmp/e"; then pass=$((pass+1)); else failed=$((failed+1)); echo "FAIL: $what: message"; cat "$tmp/e"; fi
}
"$THINTENSOR" --help >"$tmp/help.txt"; rc=$?
check "--help exits 0" [ "$rc" -eq 0 ]
check "--help lists the commands" grep -q "run .*Generate text" "$tmp/help.txt"
"$THINTENSOR" run --help >"$tmp/run_help.txt"; rc=$?
check "run --help exits 0" [ "$rc" -eq 0 ]
check "run --help shows -c/--ctx-size" grep -q -- "-c,--context,--ctx-size" "$tmp/run_help.txt"
check "--version" bash -c "'$THINTENSOR' --version | grep -q '^thintensor '"
exits "unknown command" 2 "^thintensor: error: unknown command 'runn' \(did you mean 'run'\?\); the commands are: .*convert.*run.*bench" \
  "$THINTENSOR" runn
exits "unknown command, no near one" 2 "unknown command 'frobnicate'; the commands are: " "$THINTENSOR" frobnicate
exits "no command" 2 "no command given; the commands are: " "$THINTENSOR"
exits "no command, only -q" 2 "no command given" "$THINTENSOR" -q
exits "unknown flag" 2 "not expected: --no-such-flag" "$THINTENSOR" inspect x.thin --no-such-flag
exits "missing positional" 2 "is required" "$THINTENSOR" inspect
exits "a flag without its value" 2 "--prompt" "$THINTENSOR" run x.thin --prompt
exits "a non-number" 2 "--max-tokens" "$THINTENSOR" run x.thin -n lots
exits "a value out of its set" 2 "--profile" "$THINTENSOR" run x.thin --profile fastest
exits "a bad value says where help is" 2 "Run 'thintensor run --help' for usage" "$THINTENSOR" run x.thin --top-k -1
exits "a runtime error still exits 1" 1 "none.thin: cannot open" "$THINTENSOR" inspect "$tmp/none.thin"
# The global flags after the command (docs/CHAT.md, docs/HUB.md use them so).
exits "-v after the command" 1 "none.thin: cannot open" "$THINTENSOR" inspect "$tmp/none.thin" -v
exits "--quiet after the command" 1 "not a Hugging Face model id" "$THINTENSOR" pull --quiet not/../a-repo
finish
