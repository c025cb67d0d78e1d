#!/usr/bin/env bash
# One-command use of a Hub model (issue #8): `run ORG/NAME` pulls from the mock Hub, converts into
# the cache on first use and prints the same text as `run` on the local copy; a second run reuses
# the cached pull and archive without downloading.
set -uo pipefail
MODEL="$TT_SHARED_DIR/models/tinystories-656k"
WORK=$(mktemp -d)
HUB_PID=""
cleanup() { [ -n "$HUB_PID" ] && kill "$HUB_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
unset HF_TOKEN HF_TOKEN_PATH HF_HUB_OFFLINE
export HF_HOME="$WORK/hf" THINTENSOR_HOME="$WORK/home"
n_pass=0 n_fail=0
check() { local what=$1; shift; if "$@"; then n_pass=$((n_pass + 1)); else n_fail=$((n_fail + 1)); echo "FAIL: $what"; fi; }

mkdir -p "$WORK/state"
python3 "$TT_SOURCE_DIR/tests/e2e/mock_hub.py" --root "$MODEL" --state "$WORK/state" --lifetime 300 &
HUB_PID=$!
for _ in $(seq 100); do [ -f "$WORK/state/ports.json" ] && break; sleep 0.1; done
[ -f "$WORK/state/ports.json" ] || { echo "mock hub did not start"; exit 1; }
export HF_ENDPOINT=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["endpoint"])' "$WORK/state/ports.json")

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
