#!/usr/bin/env python3
"""The table of bench/depth_bench.sh: decode tok/s at each depth for each ThinTensor binary (with the
roofline counting weights + KV bytes) and llama.cpp on the same checkpoint.

usage: depth_summary.py RESULTS_DIR name=path [name=path ...]
"""
import json, os, sys

res = sys.argv[1]
names = [s.split("=", 1)[0] for s in sys.argv[2:]]


def depth_of(test):
    return int(test.split("@d")[1]) if "@d" in test else 0


tt = {}
for n in names:
    p = os.path.join(res, f"bench-{n}.json")
    if not os.path.exists(p):
        continue
    b = json.load(open(p))
    tt[n] = {"meta": b, "tg": {depth_of(r["test"]): r for r in b["results"] if r["test"].startswith("tg")},
             "pp": [r for r in b["results"] if r["test"].startswith("pp")]}
llama = {}
p = os.path.join(res, "llama-bench.jsonl")
if os.path.exists(p):
    for line in open(p):
        line = line.strip()
        if line.startswith("{"):
            j = json.loads(line)
            if j.get("n_gen", 0) > 0:
                llama[int(j.get("n_depth", 0))] = j["avg_ts"]

depths = sorted({d for v in tt.values() for d in v["tg"]} | set(llama))
for n, v in tt.items():
    b = v["meta"]
    print(f"- {n}: {b.get('backend', '?')}, device copy {b.get('device_copy_gbs', 0):.0f} GB/s, peak VRAM "
          f"{b.get('peak_vram_bytes', 0) / 2**30:.2f} GiB" +
          "".join(f", {r['test']} {r['tokens_per_s']:.0f} tok/s" for r in v["pp"]))
    vp = os.path.join(res, f"validate-{n}.json")
    if os.path.exists(vp):
        j = json.load(open(vp))
        print(f"  validate vs transformers bf16 (512 tokens): min cosine {j.get('min_cosine', 0):.5f}, "
              f"max |dlogit| {j.get('max_abs_diff', 0):.3f}, top-1 {j.get('top1_agreement', 0):.4f}, mean KL {j.get('mean_kl', 0):.2e}")
print()
head = "| depth | bytes / token | roofline tok/s |" + "".join(f" {n} tok/s | % of roofline |" for n in tt) + " llama.cpp tok/s |" + \
       "".join(f" {n} / llama.cpp |" for n in tt)
print(head)
print("|" + "---:|" * (head.count("|") - 1))
for d in depths:
    ref = next((v["tg"][d] for v in tt.values() if d in v["tg"]), None)
    row = f"| {d} | {ref['bytes_per_token'] / 1e9:.2f} GB | {ref['roofline_tokens_per_s']:.0f} |" if ref else f"| {d} | – | – |"
    for v in tt.values():
        r = v["tg"].get(d)
        row += f" {r['tokens_per_s']:.1f} | {100 * r['tokens_per_s'] / r['roofline_tokens_per_s']:.1f}% |" if r else " – | – |"
    row += f" {llama[d]:.1f} |" if d in llama else " – |"
    for v in tt.values():
        r = v["tg"].get(d)
        row += f" {r['tokens_per_s'] / llama[d]:.2f} |" if r and d in llama else " – |"
    print(row)
