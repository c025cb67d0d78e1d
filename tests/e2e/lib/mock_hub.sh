# Sourced by the pull e2e scripts: starts tests/e2e/mock_hub.py instances serving $MODEL, with
# their state under $WORK, and stops them (and removes $WORK) on exit. No token, offline mode or
# cache of the machine's own reaches the tests: HF_HOME and the cache live in $WORK.
unset HF_TOKEN HF_TOKEN_PATH HF_HUB_OFFLINE
export HF_HOME="$WORK/hf" THINTENSOR_HOME="$WORK/home"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$WORK"; }
trap cleanup EXIT
jget() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
start_hub() {  # start_hub NAME [mock_hub.py args]: sets EP (endpoint), COMMIT, LOG (request log)
    local state="$WORK/$1"; shift
    mkdir -p "$state"
    python3 "$TT_SOURCE_DIR/tests/e2e/mock_hub.py" --root "$MODEL" --state "$state" --lifetime 300 "$@" &
    PIDS+=($!)
    for _ in $(seq 100); do [ -f "$state/ports.json" ] && break; sleep 0.1; done
    [ -f "$state/ports.json" ] || { echo "mock hub did not start"; exit 1; }
    EP=$(jget "$state/ports.json" endpoint); COMMIT=$(jget "$state/ports.json" commit); LOG="$state/requests.log"
}
pull() { HF_ENDPOINT="$EP" "$THINTENSOR" pull "$@" >"$WORK/out" 2>"$WORK/err"; }
