#!/usr/bin/env bash
# Seeds the template fuzzer (into the corpus directory $1) with the real chat templates of
# ../shared/tokenizers/*/tokenizer_config.json, each alone and followed by a NUL and each
# conversation of ../shared/fixtures/chat-template-ref/MODEL.jsonl (the input format of
# fuzz_template.cpp), plus inputs at and past the nesting bound (20,000-link chains, deep brackets
# and blocks). Nothing is copied into the repository: the seeds are written at run time.
set -euo pipefail
corpus="$1"
shared="${TT_SHARED_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)/shared}"
mkdir -p "$corpus"
/usr/bin/python3 - "$shared" "$corpus" <<'PY'
import glob, json, os, sys
shared, corpus = sys.argv[1], sys.argv[2]
def write(name, data):
    with open(os.path.join(corpus, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
n_real = 0
for cfg in sorted(glob.glob(os.path.join(shared, "tokenizers", "*", "tokenizer_config.json"))):
    model = os.path.basename(os.path.dirname(cfg))
    t = json.load(open(cfg, encoding="utf-8")).get("chat_template")
    if isinstance(t, list):
        t = next((x.get("template") for x in t if isinstance(x, dict) and x.get("name") == "default"), None)
    if not isinstance(t, str):
        continue
    write(f"real_{model}.jinja", t)
    n_real += 1
    ref = os.path.join(shared, "fixtures", "chat-template-ref", f"{model}.jsonl")
    if os.path.exists(ref):
        for i, line in enumerate(open(ref, encoding="utf-8")):
            if line.strip():
                write(f"real_{model}_{i + 1}.bin", t.encode() + b"\0" + line.strip().encode())
if n_real == 0:
    sys.exit(f"seed_fuzz_template.sh: no chat templates under {shared}/tokenizers")
n = 20000
deep = {
    "chain_add": "{{ 1" + " + 1" * n + " }}",
    "chain_filter": "{{ 'a'" + "|upper" * n + " }}",
    "chain_attr": "{{ messages" + ".a" * n + " }}",
    "chain_index": "{{ messages" + "[0]" * n + " }}",
    "parens": "{{ " + "(" * n + "1" + ")" * n + " }}",
    "lists": "{{ " + "[" * n + "]" * n + " }}",
    "dicts": "{{ " + "{'a': " * n + "1" + "}" * n + " }}",
    "nots": "{{ " + "not " * n + "1 }}",
    "ifs": "{% if 1 %}" * 2000 + "x" + "{% endif %}" * 2000,
    "fors": "{% for m in messages %}" * 2000 + "x" + "{% endfor %}" * 2000,
    # (two nested range(100000) loops are left to the unit tests: under ASan they run into the 10 s
    # time limit, and every mutation of such a seed would as well)
    "macro_recursion": "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
    "big_output": "{% set s = 'x' * 100000 %}{% for i in range(100000) %}{{ s }}{% endfor %}",
    "value_doubling": "{% set ns = namespace(x=[1]) %}{% for i in range(60) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}{{ ns.x }}",
}
for name, src in deep.items():
    write(f"deep_{name}.jinja", src)
PY
