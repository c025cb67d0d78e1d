#!/usr/bin/env bash
# `pull --quiet` as docs/HUB.md writes it (the global flag after the subcommand; issue 14): no
# progress display and no info lines on stderr, the folder still on stdout.
set -uo pipefail
MODEL="$TT_SHARED_DIR/models/tinystories-656k"
WORK=$(mktemp -d)
source "$TT_SOURCE_DIR/tests/e2e/lib/mock_hub.sh"
n_pass=0 n_fail=0
check() { local what=$1; shift; if "$@"; then n_pass=$((n_pass + 1)); else n_fail=$((n_fail + 1)); echo "FAIL: $what"; sed 's/^/  stderr: /' "$WORK/err" | tail -3; fi; }
start_hub hub
pull test-org/tinystories --quiet --cache-dir "$WORK/c1"
check "pull --quiet succeeds" [ $? = 0 ]
check "pull --quiet prints the folder" [ "$(cat "$WORK/out")" = "$WORK/c1/test-org--tinystories" ]
check "pull --quiet prints nothing on stderr" [ ! -s "$WORK/err" ]
pull test-org/tinystories --cache-dir "$WORK/c2"
check "without it, progress and info lines" grep -q "done in" "$WORK/err"
echo "$n_pass passed, $n_fail failed"
[ "$n_fail" = 0 ]
