#!/usr/bin/env bash
# The CLI's contract: --help lists the commands, unknown commands are usage errors (exit 2).
set -euo pipefail
"$THINTENSOR" --help >/dev/null
"$THINTENSOR" --version | grep -q '^thintensor '
set +e
"$THINTENSOR" no-such-command >/dev/null 2>&1; rc=$?
set -e
[ "$rc" -ne 0 ] || { echo "unknown command exited 0"; exit 1; }
echo "1 passed, 0 failed"
