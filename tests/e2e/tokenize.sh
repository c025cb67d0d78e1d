#!/usr/bin/env bash
# `thintensor tokenize` against what Hugging Face `tokenizers` produces: for qwen3, llama3, gemma3
# (tokenizer.json.xz decompressed here, into the build dir) and tinystories-656k, every line of
# ../shared/fixtures/tokenizer-ref/<name>.jsonl must match exactly: ids (--no-special),
# ids_with_special (default) and decoded. Then the llama2.c tokenizer and the bad-input errors.
set -euo pipefail
: "${THINTENSOR:?}" "${TT_SHARED_DIR:?}" "${TT_BUILD_DIR:?}"
PY=/usr/bin/python3
work="$TT_BUILD_DIR/e2e-tokenize"
rm -rf "$work" && mkdir -p "$work"
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# ---- the 61 reference strings x 4 tokenizers
for name in qwen3 llama3 gemma3; do
  mkdir -p "$work/$name"
  xz -dkc "$TT_SHARED_DIR/tokenizers/$name/tokenizer.json.xz" > "$work/$name/tokenizer.json"
  ln -s "$TT_SHARED_DIR/tokenizers/$name/tokenizer_config.json" "$work/$name/tokenizer_config.json"
done
for name in qwen3 llama3 gemma3 tinystories-656k; do
  src="$work/$name"
  [ "$name" = tinystories-656k ] && src="$TT_SHARED_DIR/models/tinystories-656k"
  ref="$TT_SHARED_DIR/fixtures/tokenizer-ref/$name.jsonl"
  "$THINTENSOR" tokenize "$src" --jsonl "$ref" --no-special > "$work/$name.plain.jsonl"
  "$THINTENSOR" tokenize "$src" --jsonl "$ref" > "$work/$name.special.jsonl"
  if "$PY" - "$ref" "$work/$name.plain.jsonl" "$work/$name.special.jsonl" "$name" <<'PYEOF'
import json, sys
ref = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
plain = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
special = [json.loads(l) for l in open(sys.argv[3], encoding="utf-8")]
assert len(ref) == 61 and len(plain) == len(ref) and len(special) == len(ref), (len(ref), len(plain), len(special))
bad = 0
for i, (r, p, s) in enumerate(zip(ref, plain, special)):
    for field, got, want in (("ids", p["ids"], r["ids"]), ("ids_with_special", s["ids"], r["ids_with_special"]),
                             ("decoded", p["decoded"], r["decoded"])):
        if got != want:
            bad += 1
            print(f"  {sys.argv[4]} line {i + 1} {field}: text {r['text'][:60]!r}\n    got  {str(got)[:200]}\n    want {str(want)[:200]}")
print(f"  {sys.argv[4]}: {3 * len(ref) - bad}/{3 * len(ref)} fields equal")
sys.exit(1 if bad else 0)
PYEOF
  then ok; else bad "$name does not match the tokenizers reference"; fi
done

# ---- --text and --json
out=$("$THINTENSOR" tokenize "$work/qwen3/tokenizer.json" --text "Hello, world!")
[ "$out" = "9707 11 1879 0" ] && ok || bad "--text printed '$out'"
out=$("$THINTENSOR" tokenize "$work/gemma3" --text "Hello, world!" --json)
[ "$out" = '{"ids":[2,9259,236764,1902,236888],"tokens":["<bos>","Hello",",","▁world","!"]}' ] && ok || bad "--json printed '$out'"

# ---- llama2.c tokenizer (stories260K): BOS, dummy prefix, byte fallback for characters not in the vocab
out=$("$THINTENSOR" tokenize "$TT_SHARED_DIR/models/stories260K/tok512.bin" --text "Once upon a time" --json)
echo "$out" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); assert d["ids"][0]==1 and "".join(d["tokens"][1:])==" Once upon a time", d' \
  && ok || bad "llama2.c tokenize printed '$out'"

# ---- bad input: a clear message naming the problem, non-zero exit
expect_error() {  # expect_error PATTERN CMD...
  local pattern="$1"; shift
  set +e; local err; err=$("$@" 2>&1 >/dev/null); local rc=$?; set -e
  if [ "$rc" -ne 0 ] && echo "$err" | grep -q -- "$pattern"; then ok; else bad "expected exit!=0 and '$pattern' from '$*', got rc=$rc: $err"; fi
}
printf '{"model": {"type": "BPE", "vocab": {' > "$work/truncated.json"
expect_error "truncated.json: invalid JSON" "$THINTENSOR" tokenize "$work/truncated.json" --text hi
echo '{"model": {"type": "Unigram", "vocab": []}}' > "$work/unigram.json"
expect_error "unknown model type 'Unigram'" "$THINTENSOR" tokenize "$work/unigram.json" --text hi
echo '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "BertPreTokenizer"}}' > "$work/pretok.json"
expect_error "unknown pre-tokenizer type 'BertPreTokenizer'" "$THINTENSOR" tokenize "$work/pretok.json" --text hi
echo '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": {"type": "Precompiled"}}' > "$work/norm.json"
expect_error "unknown normalizer type 'Precompiled'" "$THINTENSOR" tokenize "$work/norm.json" --text hi
expect_error "not valid UTF-8 (byte 0xFF at offset 2)" "$THINTENSOR" tokenize "$work/qwen3" --text $'ab\xffcd'
printf '{"text": "ok"}\n{"text": \n' > "$work/bad.jsonl"
expect_error "bad.jsonl:2: invalid JSON" "$THINTENSOR" tokenize "$work/qwen3" --jsonl "$work/bad.jsonl"
printf '{"text": 1e99999}\n' > "$work/overflow.jsonl"  # a number JSON cannot hold is malformed too
expect_error "overflow.jsonl:1: invalid JSON" "$THINTENSOR" tokenize "$work/qwen3" --jsonl "$work/overflow.jsonl"
expect_error "no such file or directory" "$THINTENSOR" tokenize "$work/missing.json" --text hi
expect_error "give --text TEXT or --jsonl FILE" "$THINTENSOR" tokenize "$work/qwen3"
head -c 100 "$TT_SHARED_DIR/models/stories260K/tok512.bin" > "$work/tok-truncated.bin"
expect_error "tok-truncated.bin: .*llama2.c tokenizer" "$THINTENSOR" tokenize "$work/tok-truncated.bin" --text hi
# 30 Replace normalizers that each double "a" (2^30 x the text): a clear error in bounded time.
"$PY" - "$work/doubling.json" "$work/deep.json" <<'PYEOF'
import json, sys
model = {"type": "BPE", "vocab": {"a": 0}, "merges": []}
reps = [{"type": "Replace", "pattern": {"String": "a"}, "content": "aa"}] * 30
json.dump({"model": model, "normalizer": {"type": "Sequence", "normalizers": reps}}, open(sys.argv[1], "w"))
deep = '{"type": "Sequence", "normalizers": [' * 50000 + '{"type": "Lowercase"}' + ']}' * 50000
open(sys.argv[2], "w").write('{"model": %s, "normalizer": %s}' % (json.dumps(model), deep))
PYEOF
start=$(date +%s)
expect_error "doubling.json: the Replace normalizer would make the text longer than 4128 bytes" \
  timeout 20 "$THINTENSOR" tokenize "$work/doubling.json" --text a
[ $(( $(date +%s) - start )) -le 10 ] && ok || bad "the doubling normalizer took over 10 s"
# 50,000 nested normalizers: the depth-bounded JSON reader refuses them (was a stack overflow).
expect_error "deep.json: JSON nested deeper than 128 levels" "$THINTENSOR" tokenize "$work/deep.json" --text a

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
