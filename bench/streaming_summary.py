#!/usr/bin/env python3
"""Tables of bench/streaming_bench.sh's results (markdown on stdout): ThinTensor resident / 8 GiB /
4 GiB against the PCIe bound measured in the same run, the planner's predictions, and transformers +
accelerate offload with the same GPU budgets. Missing pieces are reported as missing, never filled in.

usage: streaming_summary.py OUT_DIR
"""
import json, os, sys

out = sys.argv[1]


def load(name):
    p = os.path.join(out, name)
    try:
        return json.load(open(p))
    except Exception:
        return None


print("| case | placement | GB/token over PCIe | h2d pinned (same run) | PCIe bound | decode tg32 | % of bound "
      "| predicted | error | overlap | copies / kernels / wall per token | pp2048 | accelerate offload | ThinTensor / accelerate |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|")
for case in ["resident", "8GiB", "4GiB"]:
    b, p, hf = load(f"bench-{case}.json"), load(f"plan-{case}.json"), load(f"hf-offload-{case}.json")
    if not b:
        print(f"| {case} | (bench missing) |" + " |" * 12)
        continue
    tg = [r for r in b["results"] if r["test"].startswith("tg")][0]
    pp = [r for r in b["results"] if r["test"] == "pp2048"]
    plan = p["plan"] if p else None
    place = (f"{plan['n_resident_layers']}/{plan['n_layers']} layers resident, {len(plan['stream_order'])} blocks streamed"
             + (", embedding in host memory" if plan["embed_host_mapped"] else "")) if plan else "-"
    pred = plan["predicted_decode_tokens_per_s"] if plan else tg.get("predicted_tokens_per_s", 0)
    err = f"{100 * (pred - tg['tokens_per_s']) / tg['tokens_per_s']:+.1f}%" if pred else "-"
    if b.get("streaming"):
        gbt = tg["streamed_bytes_per_token"] / 1e9
        cells = [f"{gbt:.2f}", f"{tg['h2d_pinned_gbs']:.1f} GB/s", f"{tg['pcie_bound_tokens_per_s']:.2f} tok/s",
                 f"{tg['tokens_per_s']:.2f} tok/s", f"{100 * tg['pcie_bound_fraction']:.1f}%", f"{pred:.2f}", err,
                 f"{100 * tg['overlap']:.0f}%",
                 f"{tg['copy_ms_per_token']:.1f} / {tg['kernels_ms_per_token']:.1f} / {tg['wall_ms_per_token']:.1f} ms"]
    else:
        cells = ["0", "-", "-", f"{tg['tokens_per_s']:.1f} tok/s", "-", f"{pred:.1f}", err, "-", "-"]
    cells.append(f"{pp[0]['tokens_per_s']:.0f} tok/s" if pp else "-")
    if case == "resident":
        cells += ["-", "-"]
    elif hf and "decode_tok_s" in hf:
        cells += [f"{hf['decode_tok_s']:.2f} tok/s", f"x{tg['tokens_per_s'] / hf['decode_tok_s']:.1f}"]
    else:
        cells += [(hf or {}).get("error", "not measured"), "-"]
    print(f"| {case} | {place} | " + " | ".join(cells) + " |")
print()
for case in ["resident", "8GiB", "4GiB"]:
    b = load(f"bench-{case}.json")
    if b:
        print(f"- {case}: {b.get('plan', '')} (load {b['load_s']:.1f} s, peak VRAM {b['peak_vram_bytes'] / 2**30:.2f} GiB)")
d = load("doctor.json")
if d:
    for it in d.get("items", []):
        if it.get("group") == "bandwidth":
            print(f"- doctor {it['name']}: {it['value']}")
