#!/usr/bin/env bash
# `run` as a person uses it (issue #4): TinyStories-656K greedy from BOS prints exactly transformers'
# story and stops on EOS; stories260K with its llama2.c tokenizer prints llama2.c's documented
# sample; seeds reproduce; bad requests fail with a clear message and a non-zero exit.
set -uo pipefail
source "$TT_SOURCE_DIR/tests/e2e/lib/common.sh"
ts="$S/models/tinystories-656k"
"$THINTENSOR" -q convert "$ts" -o "$tmp/ts.thin"
"$THINTENSOR" run "$tmp/ts.thin" --prompt "" --temperature 0 --max-tokens 400 --device cpu >"$tmp/story.txt" 2>"$tmp/story.err"
check "TinyStories story equals bos_story_text" python3 - "$tmp/story.txt" "$ts/reference.json" <<'PY'
import json, sys
got = open(sys.argv[1], encoding="utf-8").read()
want = json.load(open(sys.argv[2]))["bos_story_text"]
sys.exit(0 if got == want + "\n" else 1)
PY
check "stops on EOS" grep -q "stop: eos" "$tmp/story.err"
# The host decode path tells the same story, and --threads sizes its pool.
"$THINTENSOR" -v run "$tmp/ts.thin" --prompt "" --temperature 0 --max-tokens 400 --device host --threads 3 >"$tmp/story.host.txt" 2>"$tmp/story.host.err"
check "--device host: the same story" cmp -s "$tmp/story.txt" "$tmp/story.host.txt"
check "--device host --threads 3: its backend" grep -q "backend host (3 threads, " "$tmp/story.host.err"
"$THINTENSOR" run "$tmp/ts.thin" --prompt "Once" --temperature 0 --max-tokens 3 >/dev/null 2>"$tmp/dev.err"
check "without --device it says which device it chose" grep -Eq "^device: (cpu|cuda)" "$tmp/dev.err"
check "prints statistics" grep -q "prefill .* tok/s .* decode .* tok/s" "$tmp/story.err"
# The HF directory directly: converted into the cache on first use, then reused.
"$THINTENSOR" run "$ts" --prompt "" --temperature 0 --max-tokens 400 --device cpu >"$tmp/story2.txt" 2>"$tmp/story2.err"
check "HF directory gives the same story" cmp -s "$tmp/story.txt" "$tmp/story2.txt"
check "HF directory is converted into the cache" grep -q "converting" "$tmp/story2.err"
"$THINTENSOR" run "$ts" --prompt "" --temperature 0 --max-tokens 5 --device cpu >/dev/null 2>"$tmp/story3.err"
check "the cached archive is reused" grep -q "using cached archive" "$tmp/story3.err"
# stories260K: the sample of llama2.c's doc/stories260K.md.
s260="$S/models/stories260K"
"$THINTENSOR" -q convert "$s260/hf" -o "$tmp/s260.thin" --tokenizer "$s260/tok512.bin"
"$THINTENSOR" -q run "$tmp/s260.thin" --temperature 0 --max-tokens 200 --device cpu </dev/null >"$tmp/s260.txt"
check "stories260K sample" grep -q "^Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball." "$tmp/s260.txt"
# Sampling: same seed, same text; another seed, another text.
for s in 1 1 2; do "$THINTENSOR" -q run "$tmp/ts.thin" --prompt "Once upon a time" --temperature 1.0 --seed $s --max-tokens 60 --device cpu >"$tmp/seed$s.$RANDOM.txt"; done
check "same seed, same text" bash -c "cmp -s $(ls "$tmp"/seed1.*.txt | tr '\n' ' ')"
check "another seed, another text" bash -c "! cmp -s $(ls "$tmp"/seed1.*.txt | head -1) $(ls "$tmp"/seed2.*.txt)"
"$THINTENSOR" -q run "$tmp/ts.thin" --prompt "Once upon a time" --top-k 1 --temperature 0.7 --max-tokens 40 --device cpu >"$tmp/k1.txt"
"$THINTENSOR" -q run "$tmp/ts.thin" --prompt "Once upon a time" --temperature 0 --max-tokens 40 --device cpu >"$tmp/g.txt"
check "top-k 1 equals greedy" cmp -s "$tmp/k1.txt" "$tmp/g.txt"
# Bad input.
fails_with "prompt longer than the context" "does not fit the context" \
  "$THINTENSOR" run "$tmp/ts.thin" --prompt "$(printf 'once upon a time %.0s' $(seq 200))" --context 64 --device cpu
fails_with "--max-tokens 0" "max-tokens must be at least 1" "$THINTENSOR" run "$tmp/ts.thin" --prompt hi --max-tokens 0 --device cpu
fails_with "unknown device" "unknown device 'tpu'" "$THINTENSOR" run "$tmp/ts.thin" --prompt hi --device tpu
mkdir -p "$tmp/foo" && cp "$S/fixtures/hf-tiny/llama"/* "$tmp/foo/" && chmod -R u+w "$tmp/foo"
sed -i 's/"LlamaForCausalLM"/"FooForCausalLM"/' "$tmp/foo/config.json"
fails_with "unsupported architecture" "unsupported architecture 'FooForCausalLM'.*supported: LlamaForCausalLM" \
  "$THINTENSOR" run "$tmp/foo" --prompt "1 2 3" --device cpu --no-fallback
fails_with "not a model" "not a .thin archive" "$THINTENSOR" run "$ts/config.json" --prompt hi --device cpu
fails_with "missing model" "no such model file or directory" "$THINTENSOR" run "$tmp/nope.thin" --prompt hi
finish
