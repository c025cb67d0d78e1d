#!/usr/bin/env bash
# One call: quant_bench's INT4 / Q4_K_M part (setup and measurements) with the plan's measured context.
cd "$(dirname "$0")/.."
STEPS="setup bench" TT_QUANTS=int4 LL_TYPES=Q4_K_M BENCH_DEADLINE_S=420 bash bench/quant_bench.sh .carry >/dev/null 2>&1
cat "$OUT/q19-summary.md"
tar -xzf "$OUT/q19-results.tgz" -O ./plan-int4-4g.txt 2>/dev/null | sed -n '/^VRAM:/,/^plan:/p'
tar -xzf "$OUT/q19-results.tgz" -O ./vram-tt-int4-4g.csv 2>/dev/null | tr '\n' ' '
grep -E "=== |--- " "$OUT/q19.log" | tail -40
