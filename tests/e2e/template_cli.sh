#!/usr/bin/env bash
# `thintensor template` as a user runs it: every line of ../shared/fixtures/chat-template-ref/
# renders byte-identically (no added newline) from each kind of SOURCE (model directory,
# tokenizer_config.json); --var reaches the template; bad input exits 1 naming what is wrong;
# hostile templates and --messages files hit the render limits with an error, not a crash or hang.
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

# Hostile templates end in one error naming the template and the limit, exit 1, and print nothing
# (no partial prompt): a 20,000-link chain (a stack overflow before the bound), deep brackets and
# blocks, two nested range(100000) loops (a hang), 100 KB printed per step (GBs), from a .jinja file
# and from a tokenizer_config.json, as a downloaded model would ship it.
expect_limit() {  # name, expected substring, command...
  local name="$1" want="$2"; shift 2
  set +e; "$@" > "$work/out" 2> "$work/err"; local rc=$?; set -e
  local lines; mapfile -t lines < "$work/err"
  if [ "$rc" -eq 1 ] && grep -qF -- "$want" "$work/err" && [ ! -s "$work/out" ] && [ "${#lines[@]}" -eq 1 ]; then
    passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAIL: $name (rc=$rc, $(wc -c < "$work/out") bytes out): $(head -c 400 "$work/err")"; fi
}
$py -c 'import sys; sys.stdout.write("{{ 1" + " + 1" * 20000 + " }}")' > "$work/chain.jinja"
expect_limit "20,000 '+ 1'" "chain.jinja:1:1026: template exceeded the nesting limit: expression nested deeper than 256 levels" \
  "$THINTENSOR" template "$work/chain.jinja" --messages "$work/hi.json"
$py -c 'import sys; sys.stdout.write("{{ messages" + "|first" * 20000 + " }}")' > "$work/filters.jinja"
expect_limit "20,000 filters" "filters.jinja:1:" "$THINTENSOR" template "$work/filters.jinja" --messages "$work/hi.json"
$py -c 'import sys; sys.stdout.write("{{ " + "(" * 20000 + "1" + ")" * 20000 + " }}")' > "$work/parens.jinja"
expect_limit "20,000 parentheses" "parens.jinja:1:" "$THINTENSOR" template "$work/parens.jinja" --messages "$work/hi.json"
$py -c 'import sys; sys.stdout.write("{% if 1 %}" * 20000 + "{% endif %}" * 20000)' > "$work/ifs.jinja"
expect_limit "20,000 nested ifs" "template exceeded the nesting limit: blocks nested deeper than 256 levels" \
  "$THINTENSOR" template "$work/ifs.jinja" --messages "$work/hi.json"
mkdir -p "$work/hostile"
$py -c 'import json,sys; json.dump({"chat_template": "{{ messages" + "[0]" * 20000 + " }}", "eos_token": "</s>"}, open(sys.argv[1], "w"))' \
  "$work/hostile/tokenizer_config.json"
expect_limit "20,000 subscripts in tokenizer_config.json" "hostile/tokenizer_config.json:chat_template:1:" \
  "$THINTENSOR" template "$work/hostile" --messages "$work/hi.json"
printf '{%% for i in range(100000) %%}{%% for j in range(100000) %%}{{ j }}{%% endfor %%}{%% endfor %%}' > "$work/hang.jinja"
expect_limit "nested range(100000) loops" "hang.jinja:1:" "$THINTENSOR" template "$work/hang.jinja" --messages "$work/hi.json"
expect_limit "nested range(100000) loops (which limit)" "template exceeded the step limit (1000000 statements and loop iterations)" \
  "$THINTENSOR" template "$work/hang.jinja" --messages "$work/hi.json"
printf "{%% set s = 'x' * 100000 %%}{%% for i in range(100000) %%}{{ s }}{%% endfor %%}" > "$work/big.jinja"
expect_limit "100 KB per step" "big.jinja:1:" "$THINTENSOR" template "$work/big.jinja" --messages "$work/hi.json"
expect_limit "100 KB per step (which limit)" "template exceeded the output limit (33554432 bytes rendered)" \
  "$THINTENSOR" template "$work/big.jinja" --messages "$work/hi.json"

# A --messages file nested 50,000 levels deep (a stack overflow before): the depth-bounded parser.
$py -c 'import sys; sys.stdout.write("[" * 50000 + "]" * 50000)' > "$work/deep.json"
expect_limit "50,000-level --messages" "--messages $work/deep.json: JSON nested deeper than 128 levels" \
  "$THINTENSOR" template "$TT_SHARED_DIR/tokenizers/qwen3" --messages "$work/deep.json"
$py -c 'import sys; sys.stdout.write("{\"messages\": [{\"role\": \"user\", \"content\": " + "{\"a\": " * 50000 + "1" + "}" * 50000 + "}]}")' > "$work/deep_obj.json"
expect_limit "50,000-level object in --messages" "JSON nested deeper than 128 levels" \
  "$THINTENSOR" template "$TT_SHARED_DIR/tokenizers/qwen3" --messages "$work/deep_obj.json"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
