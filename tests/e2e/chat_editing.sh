#!/usr/bin/env bash
# `thintensor chat` at a real terminal (tmux): the line is edited with the arrow keys before it is
# sent, Up recalls an earlier line, Ctrl-C abandons a half-typed line, Ctrl-D on a half-typed line
# sends nothing and Ctrl-D on an empty line quits with status 0. Each reply (greedy) must equal the
# reply piped `chat` gives to the line as edited: escape bytes or a wrong line give another reply.
set -euo pipefail
: "${THINTENSOR:?}" "${TT_SHARED_DIR:?}"
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/tmux.sh"

model="$tmp/tinystories.thin"
"$THINTENSOR" -q convert "$S/models/tinystories-656k" -o "$model"
tmpl="$tmp/story.jinja"
printf '%s' '{% for m in messages %}{{ m.content }}{{ "\n" }}{% endfor %}' > "$tmpl"
args=(chat "$model" --template "$tmpl" --temperature 0 --device cpu --threads 1 -n 24)

L1="Once upon a time, there was a big cat named Tom."  # typed without "big ", then Left x14, "big "
L2="One day, $L1"                                      # L1 recalled with Up Up (past /reset), Ctrl-A
# The references: piped chat, one line each (a reply is printed with one newline after it).
reference() { printf '%s\n' "$1" | "$THINTENSOR" -q "${args[@]}"; }
want1=$(reference "$L1"); want2=$(reference "$L2"); unedited=$(reference "Once upon a time, there was a cat named Tom.")
check "the references are not empty" test -n "$want1" -a -n "$want2"
check "the recall edit changes the reply" test "$want1" != "$want2"
check "the edit changes the reply (else the test proves nothing)" test "$want1" != "$unedited"

have_prompts() { [ "$(prompts)" -ge "$1" ]; }
# The reply printed after the line "> TEXT" (the lines up to the next prompt).
reply_after() { pane | awk -v line="> $1" 'found && /^>( |$)/ {exit} found {print} $0 == line {found=1}'; }
trimmed() { printf '%s\n' "$1" | sed -e 's/[[:space:]]*$//'; }

T -f /dev/null new-session -d -s chat -x 250 -y 60 \
  "'$THINTENSOR' ${args[*]@Q}; echo \$? > '$tmp/status'; sleep 120"
wait_until "the first prompt" have_prompts 1
wait_until "the line editor" editing

# A half-typed line abandoned with Ctrl-C: never sent (turn 1's reply would answer it too).
T send-keys -t chat -l "garbage words"
T send-keys -t chat C-c
wait_until "the Ctrl-C note" eval 'pane | grep -q "no reply to stop"'
wait_until "the line editor" editing

# Turn 1: Left-arrow edit inside the line.
T send-keys -t chat -l "Once upon a time, there was a cat named Tom."
T send-keys -t chat Left Left Left Left Left Left Left Left Left Left Left Left Left Left
T send-keys -t chat -l "big "
wait_until "the edited line on screen" eval 'pane | grep -qx "> $L1"'
n=$(prompts)
T send-keys -t chat Enter
wait_until "the reply to turn 1" have_prompts $((n + 1))
check "no escape bytes reach the screen" eval '! pane | grep -q "\^\[\["'
got=$(reply_after "$L1")
check "turn 1 answers the edited line: got '$got', want '$want1'" test "$got" = "$(trimmed "$want1")"
wait_until "the line editor" editing

T send-keys -t chat -l "/reset"
T send-keys -t chat Enter
wait_until "/reset" eval 'pane | grep -q "conversation cleared"'
wait_until "the line editor" editing

# Turn 2: Up Up recalls L1 (the newest entry is /reset), Ctrl-A goes to its start.
T send-keys -t chat Up Up C-a
T send-keys -t chat -l "One day, "
wait_until "the recalled, edited line on screen" eval 'pane | grep -qx "> $L2"'
n=$(prompts)
T send-keys -t chat Enter
wait_until "the reply to turn 2" have_prompts $((n + 1))
got=$(reply_after "$L2")
check "turn 2 answers the recalled, edited line: got '$got', want '$want2'" test "$got" = "$(trimmed "$want2")"
wait_until "the line editor" editing

# Ctrl-D on a half-typed line sends nothing and does not quit; Ctrl-U clears it, Ctrl-D quits.
n=$(prompts)
T send-keys -t chat -l "$L1"
T send-keys -t chat C-d C-d
sleep 1
check "Ctrl-D on a half-typed line does not end the session" test ! -e "$tmp/status"
check "Ctrl-D on a half-typed line sends nothing" test "$(prompts)" -eq "$n"
T send-keys -t chat C-u C-d
wait_until "the chat to exit" test -s "$tmp/status"
check "Ctrl-D on an empty line exits 0 (got $(cat "$tmp/status"))" test "$(cat "$tmp/status")" = 0
finish
