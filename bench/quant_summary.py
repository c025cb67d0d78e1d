#!/usr/bin/env python3
"""The summary of bench/quant_bench.sh (issue #19): ThinTensor's INT8 / INT4 profiles beside
llama.cpp's Q8_0 / Q4_K_M on the same Llama-3-8B-shaped checkpoint, as markdown.
usage: quant_summary.py RESULTS_DIR"""
import json, os, re, sys

res = sys.argv[1]


def load(name):
    p = os.path.join(res, name)
    try:
        with open(p) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def llama(t, kind, n):
    p = os.path.join(res, f"llama-bench-{t}.jsonl")
    if not os.path.exists(p):
        return None
    for line in open(p):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if (kind == "pp" and r.get("n_prompt") == n and r.get("n_gen") == 0) or \
           (kind == "tg" and r.get("n_gen") == n and r.get("n_prompt") == 0):
            return r["avg_ts"], r["stddev_ts"], r.get("model_size")
    return None


def kld(t):
    p = os.path.join(res, f"kld-{t}.txt")
    if not os.path.exists(p):
        return None
    text = open(p).read()
    m = re.search(r"Mean\s+KLD:\s+([-0-9.e+]+)", text)
    s = re.search(r"Same top p:\s+([0-9.]+)", text)
    return (float(m.group(1)) if m else None, float(s.group(1)) if s else None)


def result(b, test):
    if not b:
        return None
    for r in b["results"]:
        if r["test"] == test:
            return r
    return None


print("| | weights | tg128 tok/s | GB/token | % of roofline (tok/s bound) | pp2048 tok/s | peak VRAM |")
print("|---|---|---:|---:|---:|---:|---:|")
tt = {}
for a, label in [("bf16", "ThinTensor bf16"), ("int8", "ThinTensor INT8 (max-performance)"), ("int4", "ThinTensor INT4 (max-max-perf)")]:
    b = load(f"bench-{a}.json")
    tg, pp = result(b, "tg128"), result(b, "pp2048")
    tt[a] = (tg, pp)
    if not tg:
        print(f"| {label} | – | not measured | | | | |")
        continue
    pp_cell = f"{pp['tokens_per_s']:.0f} ± {pp['sd']:.0f}" if pp else "–"
    print(f"| {label} | {a} | {tg['tokens_per_s']:.1f} ± {tg['sd']:.1f} | {tg['bytes_per_token'] / 1e9:.3f} | "
          f"{100 * tg['gbs'] / tg['roofline_gbs']:.1f}% ({tg['roofline_tokens_per_s']:.0f}) | {pp_cell} | "
          f"{b['peak_vram_bytes'] / 2**30:.2f} GiB |")
for t in ["Q8_0", "Q4_K_M"]:
    tg, pp = llama(t, "tg", 128), llama(t, "pp", 2048)
    if not tg:
        print(f"| llama.cpp {t} | – | not measured | | | | |")
        continue
    pp_cell = f"{pp[0]:.0f} ± {pp[1]:.0f}" if pp else "–"
    # Its roofline: the GGUF's bytes (every weight, read once per token) at the device copy rate
    # ThinTensor measured in the same run.
    bw = next((r["roofline_gbs"] for r, _ in tt.values() if r), None)
    roof = f"{100 * tg[0] * tg[2] / (bw * 1e9):.1f}% ({bw * 1e9 / tg[2]:.0f})" if bw and tg[2] else ""
    print(f"| llama.cpp {t} | {t} ({(tg[2] or 0) / 1e9:.2f} GB) | {tg[0]:.1f} ± {tg[1]:.1f} | {(tg[2] or 0) / 1e9:.3f} | {roof} | "
          f"{pp_cell} | |")

print()
for a, t in [("int8", "Q8_0"), ("int4", "Q4_K_M")]:
    tg, pp = tt.get(a, (None, None))
    ltg, lpp = llama(t, "tg", 128), llama(t, "pp", 2048)
    if tg and ltg:
        print(f"- {a.upper()} vs {t}: decode x{tg['tokens_per_s'] / ltg[0]:.2f}" +
              (f", prefill pp2048 x{pp['tokens_per_s'] / lpp[0]:.2f}" if pp and lpp else ""))
b4 = load("bench-int4-4g.json")
r4 = result(b4, "tg32")
if r4:
    print(f"- INT4 at --vram-budget 4GiB: tg32 {r4['tokens_per_s']:.2f} tok/s, {r4['bytes_per_token'] / 1e9:.3f} GB/token, "
          f"peak VRAM {b4['peak_vram_bytes'] / 2**30:.2f} GiB")

print("\nQuality against the bf16 logits (ThinTensor: transformers' bf16 logits of a 512-token prompt, "
      "`validate --key logits_bf16`; llama.cpp: its own bf16 GGUF's logits over 4 x 512 tokens of text, "
      "`llama-perplexity --kl-divergence`)\n")
print("| | mean KL | top-1 agreement | min cosine |")
print("|---|---:|---:|---:|")
for a in ["bf16", "int8", "int4"]:
    v = load(f"validate-{a}.json")
    if v:
        print(f"| ThinTensor {a} | {v['mean_kl']:.2e} | {100 * v['top1_agreement']:.1f}% | {v['min_cosine']:.5f} |")
for t in ["Q8_0", "Q4_K_M"]:
    k = kld(t)
    if k:
        print(f"| llama.cpp {t} | {k[0]:.2e} | {k[1]:.1f}% | – |" if k[0] is not None and k[1] is not None else f"| llama.cpp {t} | ? | ? | – |")
