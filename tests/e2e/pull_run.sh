#!/usr/bin/env bash
# One-command use of a Hub model (issue #8): `run ORG/NAME` pulls from the mock Hub, converts into
# the cache on first use and prints the same text as `run` on the local copy; a second run reuses
# the cached pull and archive without downloading.
set -uo pipefail
MODEL="$TT_SHARED_DIR/models/tinystories-656k"
WORK=$(mktemp -d)
source "$TT_SOURCE_DIR/tests/e2e/lib/mock_hub.sh"
n_pass=0 n_fail=0
check() { local what=$1; shift; if "$@"; then n_pass=$((n_pass + 1)); else n_fail=$((n_fail + 1)); echo "FAIL: $what"; fi; }

start_hub state
export HF_ENDPOINT=$EP

args=(--prompt "Once upon a time" --temperature 0 --max-tokens 40 --device cpu)
"$THINTENSOR" run "$MODEL" "${args[@]}" >"$WORK/local.txt" 2>"$WORK/local.err"
check "run on the local copy succeeds" [ -s "$WORK/local.txt" ]
"$THINTENSOR" run test-org/tinystories "${args[@]}" >"$WORK/hub.txt" 2>"$WORK/hub.err"
check "run ORG/NAME succeeds" [ $? -eq 0 ]
check "run ORG/NAME prints the same text as the local copy" cmp -s "$WORK/local.txt" "$WORK/hub.txt"
check "it says it fetches from the Hub" grep -q "fetching it from the Hugging Face Hub" "$WORK/hub.err"
check "it says it converts into the cache" grep -q "converting .* into the cache" "$WORK/hub.err"
n_req=$(wc -l <"$WORK/state/requests.log")
"$THINTENSOR" run test-org/tinystories "${args[@]}" >"$WORK/hub2.txt" 2>"$WORK/hub2.err"
check "second run prints the same text" cmp -s "$WORK/local.txt" "$WORK/hub2.txt"
check "second run reuses the cached archive" grep -q "using cached archive" "$WORK/hub2.err"
check "second run downloads no file" [ "$(grep -c '/resolve/' <(tail -n +$((n_req + 1)) "$WORK/state/requests.log"))" = 0 ]
# A Hub id that does not exist: clear error, non-zero exit.
"$THINTENSOR" run test-org/no-such-model "${args[@]}" >/dev/null 2>"$WORK/err404"
check "missing repo fails" [ $? -ne 0 ]
check "missing repo error names it" grep -q "no-such-model" "$WORK/err404"
echo "$n_pass passed, $n_fail failed"
[ "$n_fail" -eq 0 ]
