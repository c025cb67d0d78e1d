# Sourced after common.sh by the e2e scripts that drive `thintensor chat` at a real terminal:
# a tmux server of the script's own (killed on exit whatever happens) with a window "chat", and
# bounded waits on what the pane shows.
command -v tmux >/dev/null || { echo "FAIL: this test needs tmux (apt-get install tmux)"; exit 1; }
sock="tt-$(basename "$0" .sh)-$$"
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$tmp"' EXIT
T() { tmux -L "$sock" "$@"; }
# Trailing blanks trimmed: -J keeps those of joined lines, the line being edited is padded.
pane() { T capture-pane -p -J -S - -t chat | sed -e 's/[[:space:]]*$//'; }
# Bounded waits: a hung chat fails the test after 30 s instead of hanging CI.
wait_until() {  # wait_until WHAT COMMAND...: polls COMMAND every 0.1 s for up to 30 s
  local what=$1; shift
  for _ in $(seq 300); do "$@" && return 0; sleep 0.1; done
  echo "FAIL: timed out waiting for $what; the pane:"; pane | grep -v "^$" | tail -20; return 1
}
# Whether the line editor has the terminal (echo off): the prompt shows a moment before, and keys
# typed in between would be echoed twice (a person would not notice; a test comparing text would).
editing() { stty -F "$(T display -p -t chat '#{pane_tty}')" -a 2>/dev/null | grep -qw -- -echo; }
prompts() { pane | grep -c -E '^>( |$)' || true; }
