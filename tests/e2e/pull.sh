#!/usr/bin/env bash
# `thintensor pull` against a mock Hub on loopback (tests/e2e/mock_hub.py) serving
# ../shared/models/tinystories-656k as test-org/tinystories: the pulled files are byte-identical,
# the default download set and --include/--exclude pick the right files, LFS files come through the
# CDN redirect, the token reaches the endpoint but never the CDN host, the manifest records the
# commit and sha256s, and a second pull (or a pinned commit, or offline mode) uses the cache.
set -uo pipefail
MODEL="$TT_SHARED_DIR/models/tinystories-656k"
WORK=$(mktemp -d)
source "$TT_SOURCE_DIR/tests/e2e/lib/mock_hub.sh"
n_pass=0 n_fail=0
check() {  # check "what" command...: one assertion
    local what=$1; shift
    if "$@"; then n_pass=$((n_pass + 1)); else n_fail=$((n_fail + 1)); echo "FAIL: $what"; fi
}
count() { grep -c -- "$1" "$2" || true; }

start_hub plain
CACHE="$WORK/cache"
DIR="$CACHE/test-org--tinystories"

# 1. A first pull: every file of the model, byte-identical; the stdout line is the folder.
check "pull succeeds" pull test-org/tinystories --cache-dir "$CACHE"
check "prints the model folder" [ "$(cat "$WORK/out")" = "$DIR" ]
for f in "$MODEL"/*; do
    check "$(basename "$f") is byte-identical" cmp -s "$f" "$DIR/$(basename "$f")"
done
check "a file in a subfolder (*.txt) is pulled" [ -f "$DIR/extra/notes.txt" ]
for skipped in pytorch_model.bin README.md .gitattributes; do
    check "$skipped is not in the default set" [ ! -e "$DIR/$skipped" ]
done
check "no .incomplete file is left" [ -z "$(find "$CACHE" -name '*.incomplete')" ]
check "progress ends with a done line" grep -q 'done in' "$WORK/err"
# Redirects: both LFS files came from the CDN host, without the token (there was none here).
check "LFS files are fetched from the CDN" [ "$(grep '"server": "cdn"' "$LOG" | grep -c safetensors)" = 2 ]

# 2. The manifest: complete, the resolved commit, the Hub's sha256 for each LFS file.
MAN="$DIR/.thintensor-manifest.json"
check "manifest is complete at the served commit" python3 - "$MAN" "$COMMIT" "$MODEL" <<'PY'
import hashlib, json, os, sys
m = json.load(open(sys.argv[1]))
assert m["complete"] is True and m["commit"] == sys.argv[2] and m["repo"] == "test-org/tinystories", m
files = {f["path"]: f for f in m["files"]}
assert set(files) == {"config.json", "generation_config.json", "model.safetensors", "reference.json",
                      "reference.safetensors", "special_tokens_map.json", "tokenizer.json",
                      "tokenizer_config.json", "extra/notes.txt"}, sorted(files)
for name in ("model.safetensors", "reference.safetensors"):
    data = open(os.path.join(sys.argv[3], name), "rb").read()
    f = files[name]
    assert f["lfs"] and f["sha256"] == hashlib.sha256(data).hexdigest() and f["size"] == len(data), f
    assert f["etag"] == f["sha256"], f  # X-Linked-Etag of an LFS file is its sha256
PY

# 3. A second pull asks the API once and downloads nothing.
before=$(wc -l <"$LOG")
check "second pull succeeds" pull test-org/tinystories --cache-dir "$CACHE"
check "second pull says up to date" grep -q 'up to date' "$WORK/err"
check "second pull downloads nothing" [ "$(tail -n +$((before + 1)) "$LOG" | grep -c resolve)" = 0 ]

# 4. --include adds to the default set, --exclude removes from it.
check "pull with --include/--exclude" pull test-org/tinystories --cache-dir "$WORK/cache2" \
    --include '*.bin' --exclude '*.txt' --exclude 'reference.*' --jobs 1
D2="$WORK/cache2/test-org--tinystories"
check "--include '*.bin' pulls pytorch_model.bin" [ -f "$D2/pytorch_model.bin" ]
check "--exclude '*.txt' skips extra/notes.txt" [ ! -e "$D2/extra/notes.txt" ]
check "--exclude 'reference.*' skips reference.json" [ ! -e "$D2/reference.json" ]
check "model.safetensors still pulled" cmp -s "$MODEL/model.safetensors" "$D2/model.safetensors"

# 5. The token: sent to the endpoint, never to the CDN host the LFS files redirect to.
start_hub token --mode token=hf_secret
with_token() { HF_TOKEN=hf_secret pull "$@"; }
check "pull with HF_TOKEN" with_token test-org/tinystories --cache-dir "$WORK/cache3"
check "API and resolve requests carry the token" \
    [ "$(grep '"server": "hub"' "$LOG" | grep -vc 'Bearer hf_secret')" = 0 ]
check "the CDN saw requests" [ "$(count '"server": "cdn"' "$LOG")" -ge 2 ]
check "the token never reaches the CDN host" [ "$(grep '"server": "cdn"' "$LOG" | grep -c Bearer)" = 0 ]
check "token-authenticated files are identical" cmp -s "$MODEL/model.safetensors" "$WORK/cache3/test-org--tinystories/model.safetensors"

# 6. A pinned commit: its own folder, and once complete no network at all.
EP_PLAIN=$(jget "$WORK/plain/ports.json" endpoint); EP=$EP_PLAIN; LOG="$WORK/plain/requests.log"
check "pull ORG/NAME:COMMIT" pull "test-org/tinystories:$COMMIT" --cache-dir "$CACHE"
check "a commit gets its own folder" [ "$(cat "$WORK/out")" = "$CACHE/test-org--tinystories--$COMMIT" ]
before=$(wc -l <"$LOG")
check "pinned commit again" pull "test-org/tinystories:$COMMIT" --cache-dir "$CACHE"
check "a complete pinned commit needs no request" [ "$(wc -l <"$LOG")" = "$before" ]

# 7. Offline: the cache serves a complete model; a model not in the cache is a clear error.
check "HF_HUB_OFFLINE=1 uses the cache" env HF_HUB_OFFLINE=1 "$THINTENSOR" pull test-org/tinystories --cache-dir "$CACHE" >/dev/null 2>&1
HF_HUB_OFFLINE=1 "$THINTENSOR" pull test-org/other --cache-dir "$CACHE" >/dev/null 2>"$WORK/err"; rc=$?
check "offline without a cached copy fails" [ "$rc" = 1 ]
check "offline error says why" grep -q 'HF_HUB_OFFLINE' "$WORK/err"

# 8. The Hub unreachable but the model complete in the cache: a warning, and the cached copy.
EP="http://127.0.0.1:9"   # discard port: nothing listens
check "unreachable Hub falls back to the cache" pull test-org/tinystories --cache-dir "$CACHE" --retries 0
check "the fallback is announced" grep -q 'using the cached copy' "$WORK/err"

echo "$n_pass passed, $n_fail failed"
[ "$n_fail" = 0 ]
