#!/usr/bin/env bash
# The cache (issue 14): `list`, `rm`, `show`, `pull --json` and -q against the mock Hub; a
# mistyped local path fails at once without asking the Hub; an unreachable Hub with a complete
# cached copy answers in well under a second; lock files do not pile up; an unwritable
# THINTENSOR_HOME is named in the error.
set -uo pipefail
MODEL="$TT_SHARED_DIR/models/tinystories-656k"
WORK=$(mktemp -d)
source "$TT_SOURCE_DIR/tests/e2e/lib/mock_hub.sh"
T="$THINTENSOR"
n_pass=0 n_fail=0
check() {
    local what=$1; shift
    if "$@"; then n_pass=$((n_pass + 1)); else n_fail=$((n_fail + 1)); echo "FAIL: $what"; sed 's/^/  stderr: /' "$WORK/err" 2>/dev/null | tail -5; fi
}
py() { python3 -c "$@"; }
now() { date +%s.%N; }
hold_lock() {  # hold_lock FILE: a process that holds an flock on FILE until killed (sets holder)
    rm -f "$WORK/locked"
    python3 -c 'import fcntl, sys, time; f = open(sys.argv[1], "a"); fcntl.flock(f, fcntl.LOCK_EX); open(sys.argv[2], "w").close(); time.sleep(60)' "$1" "$WORK/locked" &
    holder=$!
    for _ in $(seq 200); do [ -e "$WORK/locked" ] && return; sleep 0.05; done
}
under() { py "import sys; sys.exit(not ($(now) - $1 < $2))"; }  # under T0 SECONDS: elapsed since T0
start_hub hub
export HF_ENDPOINT="$EP"
H="$THINTENSOR_HOME"
M="$H/models"
args=(-p "Once upon a time" --temperature 0 --max-tokens 8 --device cpu)

# 1. pull --json: the snapshot as JSON on stdout; -q: nothing on stderr (no progress, no info).
"$T" -q pull test-org/tinystories --json >"$WORK/pull.json" 2>"$WORK/err"
check "pull --json succeeds" [ $? = 0 ]
check "-q pull prints nothing on stderr" [ ! -s "$WORK/err" ]
check "pull --json describes the snapshot" py "
import json, os, sys
j = json.load(open('$WORK/pull.json'))
assert j['repo'] == 'test-org/tinystories' and j['revision'] == 'main' and j['commit'] == '$COMMIT', j
assert j['path'] == '$M/test-org--tinystories' and j['source'] == 'downloaded', j
files = {f['path']: f for f in j['files']}
assert files['model.safetensors']['downloaded'] and len(files['model.safetensors']['sha256']) == 64, files
assert j['bytes'] == sum(f['size'] for f in j['files']) == j['bytes_downloaded'] > 0, j
assert all(os.path.getsize(os.path.join(j['path'], p)) == f['size'] for p, f in files.items())
"
"$T" pull test-org/tinystories --json >"$WORK/pull2.json" 2>"$WORK/err"
check "a second pull --json says up to date, nothing downloaded" py "
import json; j = json.load(open('$WORK/pull2.json'))
assert j['source'] == 'up-to-date' and j['bytes_downloaded'] == 0 and not any(f['downloaded'] for f in j['files']), j"

# 2. Lock files: none left by a pull; a stale one (nobody holds it) is swept by the next pull; one
#    a live process holds is kept.
check "no lock file left after a pull" [ -z "$(find "$M" -name '*.lock')" ]
: >"$M/test-org--crashed.lock"
: >"$M/test-org--busy.lock"
hold_lock "$M/test-org--busy.lock"
"$T" pull test-org/tinystories >/dev/null 2>"$WORK/err"
check "a stale lock file is swept" [ ! -e "$M/test-org--crashed.lock" ]
check "a held lock file is kept" [ -e "$M/test-org--busy.lock" ]
kill "$holder"; wait "$holder" 2>/dev/null

# 3. A mistyped local path is not a Hub id: "no such file", at once, and the Hub is not asked.
n_req=$(wc -l <"$LOG")
for bad in sub/ts.thin ./test-org/tinystories a/b/c test-org/model.safetensors "~/models/x"; do
    t0=$(now)
    "$T" run "$bad" "${args[@]}" >"$WORK/out" 2>"$WORK/err"; rc=$?
    check "run $bad: exit 1 (got $rc)" [ "$rc" = 1 ]
    check "run $bad: says no such file, naming it" grep -qF "thintensor: error: $bad: no such model file or directory" "$WORK/err"
    check "run $bad: at once" under "$t0" 1
done
check "no mistyped path reached the Hub" [ "$(wc -l <"$LOG")" = "$n_req" ]

# 4. run ORG/NAME with the Hub unreachable (refused, and no such host) and the model complete in
#    the cache: the cached copy at once, and it says so.
"$T" run test-org/tinystories "${args[@]}" >"$WORK/online.txt" 2>"$WORK/err"
check "run ORG/NAME online" [ -s "$WORK/online.txt" ]
for ep in http://127.0.0.1:9 http://no-such-host.invalid; do
    t0=$(now)
    HF_ENDPOINT=$ep "$T" run test-org/tinystories "${args[@]}" >"$WORK/offline.txt" 2>"$WORK/err"
    check "run ORG/NAME via $ep: same text from the cache" cmp -s "$WORK/online.txt" "$WORK/offline.txt"
    check "run ORG/NAME via $ep: in well under a second" under "$t0" 0.8
    check "run ORG/NAME via $ep: says it used the cache" grep -q "using the cached copy at commit $COMMIT" "$WORK/err"
    check "run ORG/NAME via $ep: no retries" bash -c "! grep -q retrying '$WORK/err'"
done
"$T" pull "test-org/tinystories:$COMMIT" >/dev/null 2>&1
t0=$(now)
HF_ENDPOINT=http://127.0.0.1:9 "$T" run "test-org/tinystories:$COMMIT" "${args[@]}" >"$WORK/pinned.txt" 2>"$WORK/err"
check "a pinned commit in the cache runs without the Hub" cmp -s "$WORK/online.txt" "$WORK/pinned.txt"
check "...in well under a second" under "$t0" 0.8
check "...and says it used the cache" grep -q "is in the cache; using the cached copy" "$WORK/err"

# 5. list: the pulled model with its archive, and the archive of a local directory.
"$T" run "$MODEL" "${args[@]}" >/dev/null 2>&1
"$T" list >"$WORK/list.txt" 2>"$WORK/err"
check "list succeeds" [ $? = 0 ]
check "list shows the model, complete, with its archive" grep -Eq "^test-org/tinystories +${COMMIT:0:12} +.*complete, 1 archive" "$WORK/list.txt"
check "list shows the local directory's archive" grep -Eq "^tinystories-656k-[0-9a-f]{16}\.thin .*archive of $MODEL" "$WORK/list.txt"
"$T" list --json >"$WORK/list.json" 2>"$WORK/err"
check "list --json" py "
import json, os
j = json.load(open('$WORK/list.json'))
[m] = [m for m in j['models'] if m['name'] == 'test-org/tinystories']
assert [x['name'] for x in j['models']] == ['test-org/tinystories', 'test-org/tinystories:$COMMIT'], j['models']
assert m['complete'] and m['commit'] == '$COMMIT' and m['size'] > 2_000_000 and m['last_used'].endswith('Z'), m
assert len(m['archives']) == 1 and os.path.isfile(m['archives'][0]['path']), m
assert [a['source'] for a in j['archives']] == [os.path.normpath(os.path.abspath('$MODEL'))], j['archives']"

# 6. show: spec, tokenizer, template, generation config — of a Hub id, a directory, an archive.
"$T" show test-org/tinystories >"$WORK/show.txt" 2>"$WORK/err"
check "show ORG/NAME succeeds" [ $? = 0 ]
check "show names the architecture" grep -q "architecture *llama" "$WORK/show.txt"
check "show lists the tokenizer" grep -Eq "^  vocab +2048" "$WORK/show.txt"
check "show has a generation section" grep -q "^generation" "$WORK/show.txt"
check "show has a chat template section" grep -q "^chat template" "$WORK/show.txt"
"$T" show "$MODEL" --json >"$WORK/show.json" 2>"$WORK/err"
check "show DIR --json" py "
import json
j = json.load(open('$WORK/show.json'))
assert j['spec']['n_layers'] == 2 and j['tokenizer']['kind'] == 'hf' and j['tokenizer']['vocab_size'] == 2048, j
assert isinstance(j['generation'], dict) and 'chat_template' in j and j['archive'].endswith('.thin'), j"
"$T" show nope/x.thin >/dev/null 2>"$WORK/err"; rc=$?
check "show of a missing path fails naming it" [ "$rc" = 1 ] && grep -q "nope/x.thin: no such model file or directory" "$WORK/err"

# 7. rm: the folder, its archives and stale temporary files; the local archive stays; a second
#    rm (and an unknown name) fails clearly.
local_archive=$(ls "$H/archives/"tinystories-656k-*.thin)
model_archive=$(ls "$H/archives/"test-org--tinystories-*.thin)
dead=$(sh -c 'echo $$')
: >"$H/archives/test-org--tinystories-0123456789abcdef.thin.tmp.$dead.AAAAAA"
: >"$M/test-org--tinystories/.thintensor-manifest.json.tmp.$dead.BBBBBB"
hold_lock "$M/test-org--tinystories.lock"
"$T" rm test-org/tinystories >/dev/null 2>"$WORK/err"; rc=$?
check "rm during a pull fails" [ "$rc" = 1 ] && grep -q "a pull of this model is running" "$WORK/err"
check "...and removes nothing" [ -d "$M/test-org--tinystories" ]
kill "$holder"; wait "$holder" 2>/dev/null
"$T" rm test-org/tinystories >"$WORK/out" 2>"$WORK/err"
check "rm succeeds" [ $? = 0 ]
check "rm says what it removed" grep -q "removed test-org/tinystories" "$WORK/err"
check "rm removes the model folder" [ ! -e "$M/test-org--tinystories" ]
check "rm removes its archive" [ ! -e "$model_archive" ]
check "rm removes its stale temporary archive" [ -z "$(ls "$H/archives/" | grep '\.tmp\.')" ]
check "rm removes its lock file" [ ! -e "$M/test-org--tinystories.lock" ]
check "rm keeps the archive of the local directory" [ -f "$local_archive" ]
"$T" rm test-org/tinystories >/dev/null 2>"$WORK/err"; rc=$?
check "rm of a removed model: exit 1" [ "$rc" = 1 ]
check "rm of a removed model: says not in the cache" grep -q "^thintensor: error: test-org/tinystories: not in the cache" "$WORK/err"
"$T" list --json >"$WORK/list.json"
check "list no longer shows it" py "import json; assert [m['name'] for m in json.load(open('$WORK/list.json'))['models']] == ['test-org/tinystories:$COMMIT']"
"$T" rm "$(basename "$local_archive")" >/dev/null 2>"$WORK/err"
check "rm ARCHIVE removes a cached archive" [ ! -e "$local_archive" ]

# 8. An unwritable THINTENSOR_HOME: an error naming the directory, not a library message.
RO="$WORK/ro"; mkdir -p "$RO"
if [ "$(id -u)" != 0 ]; then
    chmod 555 "$RO"
    THINTENSOR_HOME="$RO" "$T" run "$MODEL" "${args[@]}" >/dev/null 2>"$WORK/err"; echo $? >"$WORK/ro.rc"
    chmod 755 "$RO"
elif unshare -m true 2>/dev/null; then
    unshare -m bash -c 'mount -t tmpfs -o ro,size=1m tmpfs "$1" && THINTENSOR_HOME="$1" "$2" run "$3" -p Once --max-tokens 2 --device cpu >/dev/null 2>"$4"; echo $? >"$5"' \
        _ "$RO" "$T" "$MODEL" "$WORK/err" "$WORK/ro.rc"
else
    echo "note: root without mount namespaces: a THINTENSOR_HOME that is a file instead"
    rmdir "$RO"; : >"$RO"
    THINTENSOR_HOME="$RO" "$T" run "$MODEL" "${args[@]}" >/dev/null 2>"$WORK/err"; echo $? >"$WORK/ro.rc"
fi
check "unwritable THINTENSOR_HOME: exit 1" [ "$(cat "$WORK/ro.rc")" = 1 ]
check "unwritable THINTENSOR_HOME: names the directory" grep -q "^thintensor: error: .*cache directory $RO/archives.*THINTENSOR_HOME" "$WORK/err"
check "unwritable THINTENSOR_HOME: no raw library message" bash -c "! grep -q 'filesystem error' '$WORK/err'"

echo "$n_pass passed, $n_fail failed"
[ "$n_fail" = 0 ]
