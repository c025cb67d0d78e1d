#!/usr/bin/env bash
# `thintensor pull` failures: each gives exit 1, one clear "thintensor: error:" line naming the
# cause, and leaves no file that looks complete: 404 repo, 404 revision, 401 without a token (and
# success once the token is set, from HF_TOKEN or the token file), a wrong token, a file whose bytes
# do not match its sha256, a file name that would escape the model folder, a read-only or full
# disk, no server at all, and bad arguments.
set -uo pipefail
MODEL="$TT_SHARED_DIR/models/tinystories-656k"
WORK=$(mktemp -d)
source "$TT_SOURCE_DIR/tests/e2e/lib/mock_hub.sh"
n_pass=0 n_fail=0
check() {
    local what=$1; shift
    if "$@"; then n_pass=$((n_pass + 1)); else n_fail=$((n_fail + 1)); echo "FAIL: $what"; sed 's/^/  stderr: /' "$WORK/err" | tail -5; fi
}
# expect_fail "what" "stderr pattern" pull-args...: exit 1 and one error line matching the pattern.
expect_fail() {
    local what=$1 pattern=$2; shift 2
    HF_ENDPOINT="$EP" "$THINTENSOR" pull "$@" >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    check "$what: exit 1 (got $rc)" [ "$rc" = 1 ]
    check "$what: error matches '$pattern'" grep -q "^thintensor: error: .*$pattern" "$WORK/err"
    check "$what: the error is printed once" [ "$(grep -c '^thintensor: error:' "$WORK/err")" = 1 ]
    check "$what: nothing on stdout" [ ! -s "$WORK/out" ]
}
manifest_incomplete() { python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["complete"] is False' "$1/.thintensor-manifest.json"; }

start_hub plain
C="$WORK/cache"
# 1. Not found: the repo, the revision.
expect_fail "404 repo" "test-org/nope: repository not found" test-org/nope --cache-dir "$C"
check "404 repo leaves no model folder" [ ! -e "$C/test-org--nope" ]
expect_fail "404 revision" "revision 'v9' not found" test-org/tinystories:v9 --cache-dir "$C"

# 2. A file name from the server that would escape the model folder.
start_hub evil --mode evil
expect_fail "../ in a file name" "'../evil.json', which would land outside the model folder" test-org/tinystories --cache-dir "$C/sub"
check "nothing written outside the folder" [ ! -e "$C/sub/evil.json" -a ! -e "$C/evil.json" ]

# 3. A private repo: 401 without a token, 401 with a wrong one, success with the right one from
#    HF_TOKEN or from $HF_HOME/token; the CDN never sees it.
start_hub private --mode token=hf_right
expect_fail "401 without token" "authentication required (HTTP 401).*set HF_TOKEN" test-org/tinystories --cache-dir "$C"
check "401 leaves no model folder" [ ! -e "$C/test-org--tinystories" ]
HF_TOKEN=hf_wrong expect_fail "401 wrong token" "rejected the token" test-org/tinystories --cache-dir "$C"
with_token() { HF_TOKEN=hf_right pull "$@"; }
check "HF_TOKEN opens the private repo" with_token test-org/tinystories --cache-dir "$C/env"
check "...and the files are identical" cmp -s "$MODEL/model.safetensors" "$C/env/test-org--tinystories/model.safetensors"
mkdir -p "$HF_HOME" && printf 'hf_right\n' >"$HF_HOME/token"
check "the token file opens the private repo" pull test-org/tinystories --cache-dir "$C/file"
rm "$HF_HOME/token"
check "...and the files are identical" cmp -s "$MODEL/model.safetensors" "$C/file/test-org--tinystories/model.safetensors"
check "the token never reached the CDN" [ "$(grep '"server": "cdn"' "$LOG" | grep -c Bearer)" = 0 ]

# 4. Content that does not match its sha256: refused, and nothing of it kept.
start_hub badsha --mode bad-sha=model.safetensors
expect_fail "sha256 mismatch" "sha256 mismatch for model.safetensors: the Hub lists [0-9a-f]\{64\}, the downloaded bytes hash to" \
    test-org/tinystories --cache-dir "$C/bad"
D="$C/bad/test-org--tinystories"
check "sha256 mismatch: no model.safetensors" [ ! -e "$D/model.safetensors" ]
check "sha256 mismatch: the bad bytes are not kept" [ ! -e "$D/model.safetensors.incomplete" ]
check "sha256 mismatch: the manifest says incomplete" manifest_incomplete "$D"

# 5. Disk failures. As a normal user a read-only folder is chmod 555; root ignores that, so root
#    uses a private mount namespace: a read-only tmpfs, and a 1 MiB tmpfs that fills up mid-file.
start_hub disk
if [ "$(id -u)" != 0 ]; then
    mkdir -p "$C/ro" && chmod 555 "$C/ro"
    expect_fail "read-only cache dir" "Permission denied" test-org/tinystories --cache-dir "$C/ro"
    chmod 755 "$C/ro"
elif unshare -m true 2>/dev/null; then
    cat >"$WORK/disk.sh" <<'SH'
set -u
mkdir -p "$1/ro" "$1/full"
mount -t tmpfs -o ro,size=1m tmpfs "$1/ro" && mount -t tmpfs -o size=1m tmpfs "$1/full" || exit 99
HF_ENDPOINT="$2" "$3" pull test-org/tinystories --cache-dir "$1/ro" >/dev/null 2>"$1/ro.err"; echo $? >"$1/ro.rc"
HF_ENDPOINT="$2" "$3" pull test-org/tinystories --cache-dir "$1/full" --jobs 1 >/dev/null 2>"$1/full.err"; echo $? >"$1/full.rc"
ls -A "$1/full/test-org--tinystories" >"$1/full.ls" 2>&1
SH
    unshare -m bash "$WORK/disk.sh" "$WORK/disk" "$EP" "$THINTENSOR"
    check "read-only cache dir: exit 1" [ "$(cat "$WORK/disk/ro.rc")" = 1 ]
    check "read-only cache dir: says so" grep -q '^thintensor: error: .*Read-only file system' "$WORK/disk/ro.err"
    check "disk full: exit 1" [ "$(cat "$WORK/disk/full.rc")" = 1 ]
    check "disk full: says so" grep -q '^thintensor: error: .*write failed: No space left on device' "$WORK/disk/full.err"
    check "disk full: no model.safetensors in place" bash -c "! grep -qx model.safetensors '$WORK/disk/full.ls'"
else
    echo "note: root without mount namespaces: checking a cache dir that is a file instead"
    touch "$C/afile"
    expect_fail "unwritable cache dir" "Not a directory" test-org/tinystories --cache-dir "$C/afile"
fi

# 6. No server at all (connection refused) or no such host (DNS): a clear network error at once,
#    without the retries and backoff meant for transient failures.
EP="http://127.0.0.1:9"
expect_fail "no server" "cannot reach the Hub at http://127.0.0.1:9: .*Couldn't connect" test-org/tinystories --cache-dir "$C/none" --retries 3
check "no server: not retried" bash -c "! grep -q retrying '$WORK/err'"
EP="http://no-such-host.invalid"
t0=$(date +%s.%N)
expect_fail "no such host" "cannot reach the Hub at http://no-such-host.invalid: .*resolve" test-org/tinystories --cache-dir "$C/none" --retries 3
check "no such host: not retried" bash -c "! grep -q retrying '$WORK/err'"
# Three retries would back off 0.5 + 1 + 2 s.
check "no such host: fails in under 3 s" python3 -c "import sys,time; sys.exit(time.time() - $t0 >= 3)"
check "a failed pull leaves no lock file" [ -z "$(find "$C" -name '*.lock')" ]

# 7. Bad arguments name the flag or the id at fault.
expect_fail "bad repo id" "'not-a-repo': not a Hugging Face model id" not-a-repo --cache-dir "$C"
expect_fail "--jobs 0" "--jobs 0: expected 1 to 64" test-org/tinystories --jobs 0 --cache-dir "$C"
HF_ENDPOINT="ftp://x" "$THINTENSOR" pull test-org/tinystories --cache-dir "$C" >/dev/null 2>"$WORK/err"
check "bad HF_ENDPOINT is named" grep -q "^thintensor: error: HF_ENDPOINT='ftp://x'" "$WORK/err"

echo "$n_pass passed, $n_fail failed"
[ "$n_fail" = 0 ]
