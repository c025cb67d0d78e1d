# Sourced by the e2e scripts (tests/e2e/*.sh; this folder is not globbed as tests): a temp dir
# removed on exit with THINTENSOR_HOME inside it, the assertion helpers, and the summary.
S="$TT_SHARED_DIR"; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export THINTENSOR_HOME="$tmp/home"
pass=0; failed=0
check() { local what=$1; shift; if "$@"; then pass=$((pass+1)); else failed=$((failed+1)); echo "FAIL: $what"; fi; }
fails_with() {  # fails_with "what" "message regex" command...: non-zero exit, stderr matches
  local what=$1 re=$2; shift 2
  if "$@" >"$tmp/o" 2>"$tmp/e"; then failed=$((failed+1)); echo "FAIL: $what exited 0"; return; fi
  if grep -Eq -e "$re" "$tmp/e"; then pass=$((pass+1)); else failed=$((failed+1)); echo "FAIL: $what: message"; cat "$tmp/e"; fi
}
finish() { echo "$pass passed, $failed failed"; [ "$failed" -eq 0 ]; }
