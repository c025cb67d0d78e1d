#!/usr/bin/env bash
# Flags of the model commands (run, chat, bench, validate) are checked as they are parsed: NaN,
# infinities and out-of-range values are usage errors (exit 2) naming the flag and the rule;
# --seed -1 is random (printed), -c/--ctx-size are --context; the global -q/-v also work after the
# command; bench's defaults fit a model with a short context (TinyStories-656K: 512).
set -uo pipefail
source "$TT_SOURCE_DIR/tests/e2e/lib/common.sh"
ts="$S/models/tinystories-656k"
"$THINTENSOR" -q convert "$ts" -o "$tmp/ts.thin"
m="$tmp/ts.thin"

usage_fails() {  # usage_fails "what" "message regex" command...: exit 2, stderr matches
  local what=$1 re=$2 rc; shift 2
  "$@" >"$tmp/o" 2>"$tmp/e"; rc=$?
  if [ "$rc" -ne 2 ]; then failed=$((failed+1)); echo "FAIL: $what: exit $rc, want 2"; cat "$tmp/e"; return; fi
  if grep -Eq -e "$re" "$tmp/e"; then pass=$((pass+1)); else failed=$((failed+1)); echo "FAIL: $what: message"; cat "$tmp/e"; fi
}

# Sampling flags (run and chat share them).
usage_fails "--temperature nan" "--temperature: must be a finite number >= 0, got nan" "$THINTENSOR" run "$m" -p hi --temperature nan
usage_fails "-t inf" "--temperature: must be a finite number >= 0, got inf" "$THINTENSOR" run "$m" -p hi -t inf
usage_fails "--temperature -1" "--temperature: must be >= 0, got -1" "$THINTENSOR" run "$m" -p hi --temperature -1
usage_fails "--top-p nan" "--top-p: must be a finite number in \(0, 1\], got nan" "$THINTENSOR" run "$m" -p hi --top-p nan
usage_fails "--top-p 0" "--top-p: must be in \(0, 1\], got 0" "$THINTENSOR" run "$m" -p hi --top-p 0
usage_fails "--min-p nan" "--min-p: must be a finite number in \[0, 1\], got nan" "$THINTENSOR" run "$m" -p hi --min-p nan
usage_fails "--repeat-penalty nan" "--repeat-penalty: must be a finite number > 0, got nan" "$THINTENSOR" run "$m" -p hi --repeat-penalty nan
usage_fails "--repeat-penalty inf" "--repeat-penalty: must be a finite number > 0, got inf" "$THINTENSOR" run "$m" -p hi --repeat-penalty inf
usage_fails "--repeat-penalty 0" "--repeat-penalty: must be > 0, got 0" "$THINTENSOR" run "$m" -p hi --repeat-penalty 0
usage_fails "--repeat-penalty 1e39 (+Inf as a float)" "--repeat-penalty: must be a finite number > 0, got 1e39" "$THINTENSOR" run "$m" -p hi --repeat-penalty 1e39
usage_fails "--top-p 1e-50 (0 as a float)" "--top-p: must be in \(0, 1\], got 1e-50" "$THINTENSOR" run "$m" -p hi --top-p 1e-50
usage_fails "--top-k -5" "--top-k: must be at least 0, got -5" "$THINTENSOR" run "$m" -p hi --top-k -5
usage_fails "--top-k abc" "--top-k: 'abc' is not a whole number" "$THINTENSOR" run "$m" -p hi --top-k abc
usage_fails "--stop ''" "--stop: an empty stop string" "$THINTENSOR" run "$m" -p hi --stop ""
usage_fails "--seed -2" "--seed: must be a whole number from 0 to 2\^64-1, or -1 for random; got '-2'" "$THINTENSOR" run "$m" -p hi --seed -2
usage_fails "--seed 2^64" "--seed: must be a whole number" "$THINTENSOR" run "$m" -p hi --seed 18446744073709551616
usage_fails "chat --temperature nan" "--temperature: must be a finite number" "$THINTENSOR" chat "$m" --temperature nan
# Model flags (run, chat, bench, plan, validate share them).
usage_fails "--threads 0" "--threads: must be between 1 and [0-9]+ \(4 x the [0-9]+ hardware threads\), got 0" "$THINTENSOR" run "$m" -p hi --threads 0
usage_fails "--threads -3" "--threads: must be between 1 and" "$THINTENSOR" run "$m" -p hi --threads -3
usage_fails "--threads 100000" "--threads: must be between 1 and [0-9]+ .*got 100000" "$THINTENSOR" run "$m" -p hi --threads 100000
usage_fails "--context 0" "--context: must be at least 1, got 0" "$THINTENSOR" run "$m" -p hi --context 0
usage_fails "--context -5" "--context: must be at least 1, got -5" "$THINTENSOR" run "$m" -p hi --context -5
usage_fails "-c 0" "--context: must be at least 1, got 0" "$THINTENSOR" run "$m" -p hi -c 0
usage_fails "--vram-budget 0" "--vram-budget: must be more than 0 bytes" "$THINTENSOR" run "$m" -p hi --vram-budget 0
usage_fails "--ram-budget 0GiB" "--ram-budget: must be more than 0 bytes" "$THINTENSOR" run "$m" -p hi --ram-budget 0GiB
usage_fails "--vram-budget 8X" "--vram-budget: '8X': unknown unit" "$THINTENSOR" run "$m" -p hi --vram-budget 8X
usage_fails "bench --threads 0" "--threads: must be between 1" "$THINTENSOR" bench "$m" --threads 0
usage_fails "validate --context 0" "--context: must be at least 1" "$THINTENSOR" validate "$m" --context 0
usage_fails "plan --vram-budget 0" "--vram-budget: must be more than 0 bytes" "$THINTENSOR" plan "$m" --vram-budget 0
# A bound is printed as the rule, not as std::to_string(DBL_MAX).
usage_fails "doctor --python-timeout 0" "--python-timeout: must be > 0, got 0" "$THINTENSOR" doctor --python-timeout 0
check "doctor --python-timeout 0: a short message" [ "$(wc -c <"$tmp/e")" -lt 200 ]

# -c and --ctx-size are --context.
long="$(printf 'once upon a time %.0s' $(seq 40))"
for f in -c --ctx-size --context; do
  fails_with "$f 64 sets the context" "does not fit the context of 64 tokens" "$THINTENSOR" run "$m" -p "$long" $f 64 --device cpu
done
"$THINTENSOR" run "$m" -p Once -n 4 -t 0 -c 32 --device cpu >/dev/null 2>"$tmp/c.err"
check "-c 32 runs" grep -q "stop: max tokens" "$tmp/c.err"

# --seed -1 is random and printed, as in llama.cpp; a printed seed repeats the text.
for i in 1 2; do
  "$THINTENSOR" run "$m" -p "Once upon a time" -t 1 --seed -1 -n 40 --device cpu >"$tmp/r$i.txt" 2>"$tmp/r$i.err"
done
check "--seed -1 prints the seed" grep -Eq "^seed: [0-9]+ \(random" "$tmp/r1.err"
seed1=$(sed -nE 's/^seed: ([0-9]+) .*/\1/p' "$tmp/r1.err")
seed2=$(sed -nE 's/^seed: ([0-9]+) .*/\1/p' "$tmp/r2.err")
check "--seed -1 twice: two seeds" [ -n "$seed1" ] && [ "$seed1" != "$seed2" ]
"$THINTENSOR" -q run "$m" -p "Once upon a time" -t 1 --seed "$seed1" -n 40 --device cpu >"$tmp/r1b.txt"
check "the printed seed repeats the text" cmp -s "$tmp/r1.txt" "$tmp/r1b.txt"

# The global flags after the command.
"$THINTENSOR" run "$m" -p Once -n 3 -t 0 --device cpu -q >"$tmp/q.txt" 2>"$tmp/q.err"; rc=$?
check "run ... -q: exit 0" [ "$rc" -eq 0 ]
check "run ... -q: nothing on stderr" [ ! -s "$tmp/q.err" ]
"$THINTENSOR" run "$m" -p Once -n 3 -t 0 --device cpu --verbose >/dev/null 2>"$tmp/v.err"
check "run ... --verbose: debug messages" grep -q "sampling: greedy" "$tmp/v.err"
"$THINTENSOR" inspect "$m" --quiet >/dev/null 2>"$tmp/iq.err"; rc=$?
check "inspect FILE --quiet" [ "$rc" -eq 0 ]

# bench's defaults (pp512, pp2048, tg128) on a model of 512 positions: fitted, and said so.
"$THINTENSOR" bench "$m" --device cpu --reps 1 --bandwidth 10 >"$tmp/b.txt" 2>"$tmp/b.err"; rc=$?
check "bench defaults on a 512-position model: exit 0" [ "$rc" -eq 0 ]
check "bench says the defaults were fitted" grep -q "context is 512 positions (the model's maximum), so the default --prompt-lengths 512,2048 become 256" "$tmp/b.err"
check "bench ran pp256 and tg128" bash -c "grep -q '| pp256 ' '$tmp/b.txt' && grep -q '| tg128 ' '$tmp/b.txt'"
"$THINTENSOR" bench "$m" --device cpu --reps 1 --bandwidth 10 -c 100 >"$tmp/b2.txt" 2>"$tmp/b2.err"
check "bench -c 100 fits gen tokens too" bash -c "grep -q 'default --gen-tokens 128 becomes 99' '$tmp/b2.err' && grep -q '| pp64 ' '$tmp/b2.txt'"
fails_with "an explicit --prompt-lengths that does not fit" "--prompt-lengths 2048: pp2048 needs 2049 positions, but the context is 512" \
  "$THINTENSOR" bench "$m" --device cpu --prompt-lengths 2048
fails_with "an explicit --gen-tokens that does not fit" "--gen-tokens 600: needs 601 positions, but the context is 512" \
  "$THINTENSOR" bench "$m" --device cpu --gen-tokens 600
fails_with "bench --context 1 (no room for a prompt and a step)" "--context 1: bench needs a context of at least 2 positions" \
  "$THINTENSOR" bench "$m" --device cpu --context 1
"$THINTENSOR" bench "$m" --device cpu --reps 1 --bandwidth 10 -c 2 >"$tmp/b3.txt" 2>"$tmp/b3.err"
check "bench -c 2: pp1 and tg1" bash -c "grep -q '| pp1 ' '$tmp/b3.txt' && grep -q '| tg1 ' '$tmp/b3.txt'"
finish
