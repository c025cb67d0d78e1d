#!/usr/bin/env bash
# `thintensor chat`: --stop (repeatable; the stop text is neither shown nor kept), and the exit
# status of a session in which a turn failed: piped, the session ends at the failed turn with the
# error and a non-zero exit (the turns after it are not answered); at a terminal (tmux) the error
# is shown, the session goes on, and the exit status at the end is 1.
set -euo pipefail
: "${THINTENSOR:?}" "${TT_SHARED_DIR:?}"
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/tmux.sh"

model="$tmp/tinystories.thin"
"$THINTENSOR" -q convert "$S/models/tinystories-656k" -o "$model"
story="$tmp/story.jinja"
printf '%s' '{% for m in messages %}{{ m.content }}{{ "\n" }}{% endfor %}' > "$story"
# A template that refuses one message, as real templates raise_exception on a bad role order.
boom="$tmp/boom.jinja"
printf '%s' '{% for m in messages %}{% if m.content == "boom" %}{{ raise_exception("no booms here") }}{% endif %}{{ m.content }}{{ "\n" }}{% endfor %}' > "$boom"
c=(--temperature 0 --device cpu --threads 1)
U1="Once upon a time, there was a cat named Tom."
U2="One day, Tom saw a big red ball."
U3="Lily had a red kite."

# ---- --stop: the reply ends before the first stop text of any --stop
full=$(printf '%s\n' "$U1" | "$THINTENSOR" -q chat "$model" --template "$story" "${c[@]}" -n 40)
a=${full%%" girl"*} b=${full%%Sue*}
want=$a; [ ${#b} -lt ${#a} ] && want=$b
check "the stop texts occur in the full reply (else the test proves nothing): $full" test "$want" != "$full"
got=$(printf '%s\n' "$U1" | "$THINTENSOR" -q chat "$model" --template "$story" "${c[@]}" -n 40 --stop Sue --stop " girl")
check "--stop Sue --stop ' girl' ends the reply before the first: got '$got', want '$want'" test "$got" = "$want"
# The conversation goes on after a stopped reply (the cache holds the stop text's tokens; the
# history does not).
printf '%s\n%s\n' "$U1" "$U2" | "$THINTENSOR" -v chat "$model" --template "$story" "${c[@]}" -n 40 --stop " girl" \
  > "$tmp/stop2.out" 2> "$tmp/stop2.err"
check "two turns with --stop print two replies" test "$(wc -l < "$tmp/stop2.out")" -ge 2
check "the first turn says it stopped on the stop text" grep -q "stop: stop string" "$tmp/stop2.err"
check "-v: the second turn reuses the first from the cache" grep -Eq "turn: prompt [0-9]+ tokens \([1-9][0-9]* reused" "$tmp/stop2.err"
fails_with "--stop ''" "--stop: an empty stop string" "$THINTENSOR" chat "$model" --template "$story" "${c[@]}" --stop ""

# ---- piped: a failed turn ends the session, non-zero
printf '%s\nboom\n%s\n' "$U1" "$U3" > "$tmp/in_boom"
rc=0
"$THINTENSOR" -q chat "$model" --template "$boom" "${c[@]}" -n 20 < "$tmp/in_boom" > "$tmp/boom.out" 2> "$tmp/boom.err" || rc=$?
check "piped: a template error in a turn exits non-zero (got $rc)" test "$rc" -ne 0
check "piped: the error names the template and its message" grep -q "boom.jinja:1:[0-9]*: template raised an error: no booms here" "$tmp/boom.err"
check "piped: the error is printed once" test "$(grep -c "no booms here" "$tmp/boom.err")" -eq 1
check "piped: the turns after the failed one are not answered" test "$(wc -l < "$tmp/boom.out")" -eq 1
printf '%s\n%s\n%s\n' "$U1" "$U2" "$U3" > "$tmp/in_long"
rc=0
"$THINTENSOR" -q chat "$model" --template "$story" "${c[@]}" -n 30 --context 48 < "$tmp/in_long" > "$tmp/long.out" 2> "$tmp/long.err" || rc=$?
check "piped: a conversation outgrowing the context exits non-zero (got $rc)" test "$rc" -ne 0
check "piped: the error says the conversation no longer fits" grep -q "no longer fits the context of 48 tokens" "$tmp/long.err"

# ---- at a terminal: the error is shown, the session goes on, exit status 1 at the end
args=(chat "$model" --template "$boom" "${c[@]}" -n 20)
T -f /dev/null new-session -d -s chat -x 250 -y 60 \
  "'$THINTENSOR' ${args[*]@Q}; echo \$? > '$tmp/status'; sleep 120"
wait_until "the first prompt" eval '[ "$(prompts)" -ge 1 ]'
wait_until "the line editor" editing
T send-keys -t chat -l "boom"
T send-keys -t chat Enter
wait_until "the error" eval 'pane | grep -q "no booms here"'
wait_until "the prompt after the error" eval '[ "$(prompts)" -ge 2 ]'
wait_until "the line editor" editing
T send-keys -t chat -l "$U1"
T send-keys -t chat Enter
wait_until "the reply after the error" eval '[ "$(prompts)" -ge 3 ]'
wait_until "the line editor" editing
check "terminal: the session goes on after a failed turn" eval 'pane | grep -qx "> $U1"'
T send-keys -t chat C-d
wait_until "the chat to exit" test -s "$tmp/status"
check "terminal: a session with a failed turn exits 1 (got $(cat "$tmp/status"))" test "$(cat "$tmp/status")" = 1
check "terminal: the exit says why" eval 'pane | grep -q "1 turn failed in this session: exit status 1"'
finish
