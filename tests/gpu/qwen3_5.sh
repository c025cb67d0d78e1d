# Sourced by tests/gpu/run.sh (its check(), $TT, $S, $work, $C): Qwen3.5 on CUDA beyond the fixture
# parity of run.sh (issue #17). The CPU reference is the oracle:
# - greedy ids of the f32 fixture for prompts of 1, 63, 64, 65 and 200 tokens (prefill in one,
#   several and partial 64-token chunks of the DeltaNet rule, then 40 decode steps of its
#   recurrence) equal on CPU and CUDA; and with the weights streamed (a budget below the resident one);
# - a three-turn chat on the quickstart's tiny Qwen3.5 (real Qwen3 tokenizer and template) prints
#   the same replies on CPU and CUDA: the second and third turns restore a recurrent-state
#   checkpoint (or recompute), never a wrong state.
q35=$work/qwen3_5_text.f32.thin
ids() { python3 -c "import random,sys; r=random.Random(int(sys.argv[2])); print(' '.join(str(r.randrange(256)) for _ in range(int(sys.argv[1]))))" "$@"; }
# ran_ok FILE: the run exited 0 (its status on the last line) and printed ids
ran_ok() { [ "$(tail -n 1 "$1")" = "rc=0" ] && [ "$(wc -l <"$1")" -ge 2 ]; }
both_ok() { ran_ok "$1" && ran_ok "$2"; }
ctx=256  # the fixture's max_position_embeddings
budget=$($TT -q plan "$q35" --json --context $ctx | python3 -c 'import json,sys; p=json.load(sys.stdin)["plan"]; print(p["min_vram"] + 300 * 1024)')
for n in 1 63 64 65 200; do
  p=$(ids $n $n)
  for dev in cpu cuda stream; do
    extra=(); d=$dev
    [ $dev = stream ] && { d=cuda; extra=(--vram-budget "$budget"); }
    { $TT -q run "$q35" --prompt "$p" --temperature 0 --max-tokens 40 --context $ctx --device $d "${extra[@]}" 2>"$work/q35.$n.$dev.err"; echo "rc=$?"; } >"$work/q35.$n.$dev"
  done
  check "qwen3_5 prompt of $n tokens: runs on cpu and cuda" both_ok "$work/q35.$n.cpu" "$work/q35.$n.cuda"
  check "qwen3_5 prompt of $n tokens: greedy ids equal on cpu and cuda" cmp "$work/q35.$n.cpu" "$work/q35.$n.cuda"
  check "qwen3_5 prompt of $n tokens: streamed == cpu" cmp "$work/q35.$n.cpu" "$work/q35.$n.stream"
done
$TT plan "$q35" --context $ctx --vram-budget "$budget" 2>&1 | grep "^plan:" | tee -a "$OUT/checks.log"

ck=$work/q35chat
python3 tests/e2e/make_qwen3_5_checkpoint.py "$ck" --shared "$S" >/dev/null
$TT -q convert "$ck" -o "$work/q35chat.thin" 2>/dev/null
printf '%s\n' "Explain quantum computing in one sentence." "And in two?" "Thanks." >"$work/q35chat.in"
for dev in cpu cuda; do
  { $TT -v chat "$work/q35chat.thin" --device $dev --temperature 0 -n 12 <"$work/q35chat.in" 2>"$work/q35chat.$dev.err"; echo "rc=$?"; } >"$work/q35chat.$dev"
done
check "qwen3_5 three-turn chat: runs on cpu and cuda" both_ok "$work/q35chat.cpu" "$work/q35chat.cuda"
check "qwen3_5 three-turn chat: same replies on cpu and cuda" cmp "$work/q35chat.cpu" "$work/q35chat.cuda"
grep -h "turn: prompt" "$work/q35chat.cuda.err" | tee -a "$OUT/checks.log"
tail -n 3 "$work"/q35*.err 2>/dev/null | grep -i "error" | head -5
