#!/usr/bin/env bash
# Seeds the template fuzzer with the real chat templates of ../shared/tokenizers (not copied into
# the repository: extracted into the corpus directory given as $1 at run time).
set -euo pipefail
corpus="$1"
shared="${TT_SHARED_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)/shared}"
for cfg in "$shared"/tokenizers/*/tokenizer_config.json; do
  name=$(basename "$(dirname "$cfg")")
  /usr/bin/python3 -c 'import json,sys; t=json.load(open(sys.argv[1])).get("chat_template"); sys.stdout.write(t if isinstance(t,str) else "")' \
    "$cfg" > "$corpus/real_$name.jinja"
done
