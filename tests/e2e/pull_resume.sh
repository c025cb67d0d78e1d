#!/usr/bin/env bash
# Resuming: a connection dropped mid-file is retried with an HTTP Range from where the partial file
# ends (seen in the mock Hub's request log); a server that dies mid-file leaves only a
# ".incomplete" file and an incomplete manifest, and the next pull resumes it; a server that
# ignores Range, or a stale partial file from other bytes, still ends in a verified, identical file.
set -uo pipefail
MODEL="$TT_SHARED_DIR/models/tinystories-656k"
SIZE=$(stat -c %s "$MODEL/model.safetensors")
WORK=$(mktemp -d)
source "$TT_SOURCE_DIR/tests/e2e/lib/mock_hub.sh"
n_pass=0 n_fail=0
check() {
    local what=$1; shift
    if "$@"; then n_pass=$((n_pass + 1)); else n_fail=$((n_fail + 1)); echo "FAIL: $what"; sed 's/^/  stderr: /' "$WORK/err" 2>/dev/null | tail -5; fi
}
# The Range header of the CDN requests for model.safetensors, one per line ("None" for none).
ranges() { python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["server"] == "cdn" and "model.safetensors" in r["path"]: print(r["range"])' "$1"; }

# 1. Dropped once mid-file: the same pull retries with Range from the bytes it has, and verifies.
start_hub drop --mode drop-once=model.safetensors
check "pull through a dropped connection" pull test-org/tinystories --cache-dir "$WORK/c1" --jobs 1
check "the drop was retried with a warning" grep -q 'retrying' "$WORK/err"
R=$(ranges "$LOG" | tail -1)
check "the retry asked for a Range (got: $R)" bash -c "[[ '$R' =~ ^bytes=[0-9]+-$ ]]"
OFF=${R#bytes=}; OFF=${OFF%-}
check "the Range starts inside the file ($OFF of $SIZE)" [ "${OFF:-0}" -gt 0 -a "${OFF:-0}" -lt "$SIZE" ]
check "the resumed file is byte-identical" cmp -s "$MODEL/model.safetensors" "$WORK/c1/test-org--tinystories/model.safetensors"

# 2. Server gone mid-file: a clear failure, no file that looks complete; the next pull resumes.
start_hub die --mode die-mid=model.safetensors
D="$WORK/c2/test-org--tinystories"
pull test-org/tinystories --cache-dir "$WORK/c2" --jobs 1 --retries 1; rc=$?
check "server gone: exit 1" [ "$rc" = 1 ]
check "server gone: the error says to pull again" grep -q 'pull again to resume' "$WORK/err"
check "server gone: no model.safetensors in place" [ ! -e "$D/model.safetensors" ]
PART=$(stat -c %s "$D/model.safetensors.incomplete" 2>/dev/null || echo 0)
check "server gone: a partial .incomplete file ($PART bytes)" [ "$PART" -gt 0 -a "$PART" -lt "$SIZE" ]
check "server gone: the manifest says incomplete" \
    python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["complete"] is False' "$D/.thintensor-manifest.json"
start_hub after
check "the next pull succeeds" pull test-org/tinystories --cache-dir "$WORK/c2" --jobs 1
check "the next pull mentions the bytes on disk" grep -q 'already on disk' "$WORK/err"
check "the next pull resumed at byte $PART" [ "$(ranges "$LOG")" = "bytes=$PART-" ]
check "the resumed file is byte-identical" cmp -s "$MODEL/model.safetensors" "$D/model.safetensors"
check "no .incomplete left" [ -z "$(find "$WORK/c2" -name '*.incomplete')" ]
check "the manifest is complete" \
    python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["complete"] is True' "$D/.thintensor-manifest.json"

# 3. A server that ignores Range (200 with the whole file): the partial file is restarted.
start_hub norange --mode no-range=model.safetensors
D="$WORK/c3/test-org--tinystories"
mkdir -p "$D"
head -c 1000 "$MODEL/model.safetensors" >"$D/model.safetensors.incomplete"
check "pull when Range is ignored" pull test-org/tinystories --cache-dir "$WORK/c3"
check "a Range was asked" [ "$(ranges "$LOG")" = "bytes=1000-" ]
check "the file is byte-identical" cmp -s "$MODEL/model.safetensors" "$D/model.safetensors"

# 4. A stale partial file with other bytes (e.g. from an older commit): the resumed file fails its
#    sha256, is discarded, and is downloaded once more from the start.
start_hub stale
D="$WORK/c4/test-org--tinystories"
mkdir -p "$D"
head -c 5000 /dev/zero >"$D/model.safetensors.incomplete"
check "pull over a stale partial file" pull test-org/tinystories --cache-dir "$WORK/c4"
check "the mismatch is reported and retried from scratch" grep -q 'sha256 mismatch after resuming' "$WORK/err"
check "ranges: a resume, then a full download" [ "$(ranges "$LOG" | tr '\n' ' ')" = "bytes=5000- None " ]
check "the file is byte-identical" cmp -s "$MODEL/model.safetensors" "$D/model.safetensors"

# 5. A newer commit changes model.safetensors (same size) and the update is interrupted: the old
#    bytes left at that path must not pass for the new file; the next pull fetches and verifies it.
start_hub v1
check "pull the first commit" pull test-org/tinystories --cache-dir "$WORK/c5"
D="$WORK/c5/test-org--tinystories"
start_hub v2_dies --mode update=model.safetensors --mode die-mid=model.safetensors
pull test-org/tinystories --cache-dir "$WORK/c5" --jobs 1 --retries 0; rc=$?
check "the interrupted update fails" [ "$rc" = 1 ]
check "the old model.safetensors is still in place" cmp -s "$MODEL/model.safetensors" "$D/model.safetensors"
start_hub v2 --mode update=model.safetensors
V2=$(jget "$WORK/v2/ports.json" commit)
check "the update completes" pull test-org/tinystories --cache-dir "$WORK/c5"
check "model.safetensors now has the new commit's bytes" python3 - "$MODEL/model.safetensors" "$D/model.safetensors" <<'PY'
import sys
old, new = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
assert len(old) == len(new) and new[0] == old[0] ^ 0xFF and new[1:] == old[1:]
PY
check "the manifest records the new commit" \
    python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m["complete"] and m["commit"]==sys.argv[2]' "$D/.thintensor-manifest.json" "$V2"

echo "$n_pass passed, $n_fail failed"
[ "$n_fail" = 0 ]
