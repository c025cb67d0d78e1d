#!/usr/bin/env python3
"""Prints 'tok/s ± sd, GB a token, % of roofline' of the first decode result of a `thintensor bench
--json` output (the A/B calls compare the sd; the roofline is bytes a token over the copy rate).
--all: every decode result (each depth of --depths), 'test tok/s (% of roofline)', comma-separated.

usage: tg_summary.py BENCH_JSON [--all]"""
import json, sys
tgs = [x for x in json.load(open(sys.argv[1]))["results"] if x["test"].startswith("tg")]
if "--all" in sys.argv[2:]:
    print(", ".join(f"{r['test']} {r['tokens_per_s']:.1f} ({100 * r['gbs'] / r['roofline_gbs']:.1f}%)" for r in tgs))
else:
    r = tgs[0]
    print(f"{r['tokens_per_s']:.1f} ± {r['sd']:.1f} tok/s, {r['bytes_per_token'] / 1e9:.3f} GB a token, "
          f"{100 * r['gbs'] / r['roofline_gbs']:.1f}% of roofline")
