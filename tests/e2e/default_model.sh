#!/usr/bin/env bash
# The embedded default model (models/tinystories-656k): shipped unchanged, installed beside the
# binary, used by `run` when no MODEL is given, and the README's first command runs as written on
# it; a binary moved without it says where it looked.
set -uo pipefail
source "$TT_SOURCE_DIR/tests/e2e/lib/common.sh"
ts="$S/models/tinystories-656k"
for f in config.json generation_config.json model.safetensors special_tokens_map.json tokenizer.json tokenizer_config.json; do
  check "shipped $f equals ../shared's" cmp -s "$TT_SOURCE_DIR/models/tinystories-656k/$f" "$ts/$f"
  check "build tree has $f beside the binary" cmp -s "$TT_BUILD_DIR/models/tinystories-656k/$f" "$ts/$f"
done
check "the license ships with it" grep -q "Apache License" "$TT_SOURCE_DIR/models/tinystories-656k/LICENSE"

# No MODEL: the default, with the same text as the same model named explicitly.
"$THINTENSOR" run --prompt "Once upon a time" --temperature 0 --max-tokens 60 --device cpu >"$tmp/d.txt" 2>"$tmp/d.err"
check "run without MODEL exits 0" test $? -eq 0
check "it says it uses the embedded default" grep -q "embedded default, TinyStories-656K" "$tmp/d.err"
"$THINTENSOR" -q run "$ts" --prompt "Once upon a time" --temperature 0 --max-tokens 60 --device cpu >"$tmp/n.txt"
check "same text as naming the model" cmp -s "$tmp/d.txt" "$tmp/n.txt"
check "a story came out" test "$(wc -w <"$tmp/d.txt")" -gt 30

# The README's first set-up command, after its build step, exactly as written (./build/thintensor
# is this build's binary).
cmd=$(grep -m1 '^bash .ci/run --build-only && ' "$TT_SOURCE_DIR/README.md" | sed 's/^bash .ci\/run --build-only && //')
check "README has the first command" test -n "$cmd"
run_cmd=${cmd/.\/build\/thintensor/\"\$THINTENSOR\"}
(cd "$TT_SOURCE_DIR" && eval "$run_cmd --device cpu") >"$tmp/readme.txt" 2>"$tmp/readme.err"
check "README's first command succeeds" test $? -eq 0
check "README's first command prints a story" test "$(wc -w <"$tmp/readme.txt")" -gt 30

# A binary without the model beside it names where it looked and exits non-zero.
mkdir -p "$tmp/bin" && cp "$THINTENSOR" "$tmp/bin/thintensor"
fails_with "moved binary, no MODEL" "embedded default model .* is not installed beside the binary \(looked in .*$tmp/bin/models/tinystories-656k" \
  "$tmp/bin/thintensor" run --prompt "Once" --max-tokens 2 --device cpu
finish
