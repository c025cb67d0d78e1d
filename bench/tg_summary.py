#!/usr/bin/env python3
"""Prints 'tok/s  % of roofline' of the first decode result of a `thintensor bench --json` output."""
import json, sys
r = [x for x in json.load(open(sys.argv[1]))["results"] if x["test"].startswith("tg")][0]
print(f"{r['tokens_per_s']:.1f} tok/s {100 * r['gbs'] / r['roofline_gbs']:.1f}% of roofline")
