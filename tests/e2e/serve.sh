#!/usr/bin/env bash
# `thintensor serve` with a real client (issue #20): the official `openai` npm package, pinned in
# tests/e2e/serve/package.json and installed by .ci/run, drives tests/e2e/serve/openai_client.mjs
# against TinyStories-656K on loopback. No package, no pass: a missing install fails loudly.
set -uo pipefail
source "$TT_SOURCE_DIR/tests/e2e/lib/common.sh"
dir="$TT_SOURCE_DIR/tests/e2e/serve"
if [ ! -f "$dir/node_modules/openai/package.json" ]; then
  echo "FAIL: the openai npm package is not installed in $dir/node_modules (.ci/run installs it: npm install --prefix $dir)"
  exit 1
fi
want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["dependencies"]["openai"])' "$dir/package.json")
have=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$dir/node_modules/openai/package.json")
[ "$want" = "$have" ] || { echo "FAIL: openai $have is installed, package.json pins $want"; exit 1; }
"$THINTENSOR" -q convert "$S/models/tinystories-656k" -o "$tmp/ts.thin"
# A story template (the model has none): each message one line of the story, as in chat.sh.
printf '%s' '{% for m in messages %}{{ m.content }}{{ "\n\n" if m.role == "system" else "\n" }}{% endfor %}' > "$tmp/story.jinja"
# Refusals before listening: a backend with one sequence names itself; flags out of range.
fails_with "--parallel 2 on the host backend" "--parallel 2: the host .* holds 1 sequence at a time .*--device cpu" \
  "$THINTENSOR" serve "$tmp/ts.thin" --device host --parallel 2 --port 0
fails_with "--parallel 0" "--parallel" "$THINTENSOR" serve "$tmp/ts.thin" --parallel 0
fails_with "--port 70000" "--port" "$THINTENSOR" serve "$tmp/ts.thin" --port 70000
fails_with "--host that is not ours" "--host 203.0.113.7 --port 0: cannot listen there" "$THINTENSOR" serve "$tmp/ts.thin" --host 203.0.113.7 --port 0
check "the OpenAI client's checks" timeout 300 node "$dir/openai_client.mjs" "$THINTENSOR" "$tmp/ts.thin" "$tmp/story.jinja" "$tmp"
finish
