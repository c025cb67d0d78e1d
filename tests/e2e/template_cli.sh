#!/usr/bin/env bash
# `thintensor template` as a user runs it: every line of ../shared/fixtures/chat-template-ref/
# renders byte-identically (no added newline) from each kind of SOURCE (model directory,
# tokenizer_config.json); --var reaches the template; bad input exits 1 naming what is wrong.
set -euo pipefail
: "${THINTENSOR:?}" "${TT_SHARED_DIR:?}"
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
check() {  # name, expected file, actual file
  if cmp -s "$2" "$3"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: $1"; diff <(od -c "$2") <(od -c "$3") | head -20 || true; fi
}

for model in qwen3 llama3 gemma3; do
  n=0
  while IFS= read -r line; do
    n=$((n + 1))
    # The fixture line itself is a valid --messages file: {"messages": [...], ...}.
    printf '%s' "$line" > "$work/msg.json"
    printf '%s' "$line" | $py -c 'import json,sys; sys.stdout.write(json.loads(sys.stdin.read())["rendered"])' > "$work/want"
    flag=$(printf '%s' "$line" | $py -c 'import json,sys; print("--add-generation-prompt" if json.loads(sys.stdin.read())["add_generation_prompt"] else "")')
    "$THINTENSOR" template "$TT_SHARED_DIR/tokenizers/$model" --messages "$work/msg.json" $flag > "$work/got"
    check "$model line $n (directory)" "$work/want" "$work/got"
    # A bare array of messages and the tokenizer_config.json path give the same bytes.
    printf '%s' "$line" | $py -c 'import json,sys; sys.stdout.write(json.dumps(json.loads(sys.stdin.read())["messages"]))' > "$work/arr.json"
    "$THINTENSOR" template "$TT_SHARED_DIR/tokenizers/$model/tokenizer_config.json" --messages "$work/arr.json" $flag > "$work/got"
    check "$model line $n (tokenizer_config.json, array)" "$work/want" "$work/got"
  done < "$TT_SHARED_DIR/fixtures/chat-template-ref/$model.jsonl"
done

# --var: JSON when it parses (enable_thinking=false is the boolean), a string otherwise.
echo '[{"role":"user","content":"Hi"}]' > "$work/hi.json"
"$THINTENSOR" template "$TT_SHARED_DIR/tokenizers/qwen3" --messages "$work/hi.json" --add-generation-prompt \
  --var enable_thinking=false > "$work/got"
printf '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n' > "$work/want"
check "--var enable_thinking=false" "$work/want" "$work/got"
printf '{{ who }}|{{ n + 1 }}|{{ flag is sameas true }}' > "$work/t.jinja"
"$THINTENSOR" template "$work/t.jinja" --messages "$work/hi.json" --var who=world --var n=41 --var flag=true > "$work/got"
printf 'world|42|True' > "$work/want"
check "--var string/number/bool" "$work/want" "$work/got"

# Bad input: exit status 1 and one error line naming the file / flag / template position.
expect_error() {  # name, expected substring, command...
  local name="$1" want="$2"; shift 2
  set +e; "$@" > /dev/null 2> "$work/err"; local rc=$?; set -e
  if [ "$rc" -eq 1 ] && grep -qF -- "$want" "$work/err"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: $name (rc=$rc): $(cat "$work/err")"; fi
}
echo '[{"role":"user","content":"a"},{"role":"user","content":"b"}]' > "$work/bad_roles.json"
expect_error "gemma role alternation" "tokenizer_config.json:chat_template:19:12: template raised an error: Conversation roles must alternate" \
  "$THINTENSOR" template "$TT_SHARED_DIR/tokenizers/gemma3" --messages "$work/bad_roles.json"
expect_error "missing source" "$work/nope: no such file or directory" \
  "$THINTENSOR" template "$work/nope" --messages "$work/hi.json"
expect_error "directory without config" "no tokenizer_config.json or chat_template.jinja" \
  "$THINTENSOR" template "$work" --messages "$work/hi.json"
echo '{"eos_token": "x"}' > "$work/tokenizer_config.json"
expect_error "config without template" "tokenizer_config.json: no chat_template" \
  "$THINTENSOR" template "$work/tokenizer_config.json" --messages "$work/hi.json"
echo '{"role": "user"' > "$work/broken.json"
expect_error "invalid messages JSON" "--messages $work/broken.json: invalid JSON" \
  "$THINTENSOR" template "$TT_SHARED_DIR/tokenizers/qwen3" --messages "$work/broken.json"
echo '[{"content": "no role"}]' > "$work/norole.json"
expect_error "message without role" "message 0 has no \"role\"" \
  "$THINTENSOR" template "$TT_SHARED_DIR/tokenizers/qwen3" --messages "$work/norole.json"
expect_error "bad --var" "--var novalue: expected key=value" \
  "$THINTENSOR" template "$TT_SHARED_DIR/tokenizers/qwen3" --messages "$work/hi.json" --var novalue
printf 'ok\n{%% for x in messages %%}\n{%% endif %%}' > "$work/syntax.jinja"
expect_error "template syntax error" "syntax.jinja:3:4: unexpected 'endif' tag" \
  "$THINTENSOR" template "$work/syntax.jinja" --messages "$work/hi.json"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
