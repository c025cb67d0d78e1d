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


def llama(t, kind, n, name=None):
    """(tok/s, sd, model bytes) of llama-bench's pp or tg row of n tokens in llama-bench-T.jsonl
    (or the file `name`)."""
    p = os.path.join(res, name or f"llama-bench-{t}.jsonl")
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


def smi_peaks():
    """Each measured process's peak VRAM as nvidia-smi showed it (bench/lib/vram.sh), MiB."""
    peaks = {}
    try:
        for line in open(os.path.join(res, "vram.tsv")):
            f = line.rstrip("\n").split("\t")
            if len(f) >= 4 and f[3].lstrip("-").isdigit():
                peaks[f[0]] = int(f[3])
    except OSError:
        pass
    return peaks


smi = smi_peaks()


def peak_cell(name, driver_bytes=None):
    cells = []
    if name in smi:
        cells.append(f"{smi[name] / 1024:.2f} GiB (nvidia-smi)")
    if driver_bytes:
        cells.append(f"{driver_bytes / 2**30:.2f} GiB (bench)")
    return ", ".join(cells) or "–"


def result(b, test):
    if not b:
        return None
    for r in b["results"]:
        if r["test"] == test:
            return r
    return None


print("| | weights | tg128 tok/s | GB/token | % of roofline (tok/s bound) | pp2048 tok/s | peak VRAM |")
print("|---|---|---:|---:|---:|---:|---:|")
def tt_row(label, weights, b, tg, pp, vram_name):
    """One ThinTensor row of the table: tg128 beside its roofline, pp2048 when measured."""
    pp_cell = f"{pp['tokens_per_s']:.0f} ± {pp['sd']:.0f}" if pp else "–"
    print(f"| {label} | {weights} | {tg['tokens_per_s']:.1f} ± {tg['sd']:.1f} | {tg['bytes_per_token'] / 1e9:.3f} | "
          f"{100 * tg['gbs'] / tg['roofline_gbs']:.1f}% ({tg['roofline_tokens_per_s']:.0f}) | {pp_cell} | "
          f"{peak_cell(vram_name, b.get('peak_vram_bytes'))} |")


tt = {}
for a, label in [("bf16", "ThinTensor bf16"), ("int8", "ThinTensor INT8 (max-performance)"), ("int4", "ThinTensor INT4 (max-max-perf)")]:
    b = load(f"bench-{a}.json")
    tg, pp = result(b, "tg128"), result(b, "pp2048")
    tt[a] = (tg, pp)
    if not tg:
        print(f"| {label} | – | not measured | | | | |")
        continue
    tt_row(label, a, b, tg, pp, "tt-" + a)
# INT4 archives of other group sizes (quant_bench.sh's INT4_GROUPS), decode only.
groups = sorted(int(m.group(1)) for m in (re.fullmatch(r"bench-int4-g(\d+)\.json", f) for f in os.listdir(res)) if m)
for g in groups:
    b = load(f"bench-int4-g{g}.json")
    tg = result(b, "tg128")
    if tg:
        tt_row(f"ThinTensor INT4, groups of {g}", "int4", b, tg, None, f"tt-int4-g{g}")
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
          f"{pp_cell} | {peak_cell('llama-' + t)} |")

print()
for a, t in [("int8", "Q8_0"), ("int4", "Q4_K_M")]:
    tg, pp = tt.get(a, (None, None))
    ltg, lpp = llama(t, "tg", 128), llama(t, "pp", 2048)
    if tg and ltg:
        print(f"- {a.upper()} vs {t}: decode x{tg['tokens_per_s'] / ltg[0]:.2f}" +
              (f", prefill pp2048 x{pp['tokens_per_s'] / lpp[0]:.2f}" if pp and lpp else ""))
b4 = load("bench-int4-4g.json")
r4 = result(b4, "tg32")
for name, what in [("int4-4g", ""), ("int4-4g-ring2", " --ring-slots 2"), ("int4-4g-tuned", " --tune-split")]:
    b = load(f"bench-{name}.json")
    tg, pp = result(b, "tg32"), result(b, "pp512")
    if not tg:
        continue
    cpu = tg.get("cpu") or {}
    split = f", CPU layers {cpu.get('layers')} (plan's {cpu.get('planned_layers')})" if cpu else ""
    # What leaves the host each token (the bound at this budget), from the plan's line.
    m = re.search(r"(\d+) of \d+ layers resident.*per token ([\d.]+) GB over PCIe \+ ([\d.]+) GB read by the CPU", b.get("plan", ""))
    host = f", {m[1]} layers resident, {float(m[2]) + float(m[3]):.2f} GB a token from the host ({m[2]} over PCIe + {m[3]} by the CPU)" if m else ""
    print(f"- INT4 at --vram-budget 4GiB{what}: tg32 {tg['tokens_per_s']:.2f} tok/s, "
          f"{tg['bytes_per_token'] / 1e9:.3f} GB/token{host}{split}"
          + (f", pp512 {pp['tokens_per_s']:.0f} tok/s" if pp else "")
          + f", peak VRAM {peak_cell('tt-' + name, b.get('peak_vram_bytes'))}")
try:
    fit = open(os.path.join(res, "llama-4g-fit.txt")).read().strip()
except OSError:
    fit = None
if fit is not None:
    tries = [l.split("\t") for l in open(os.path.join(res, "llama-4g.tsv")).read().splitlines()[1:]] \
        if os.path.exists(os.path.join(res, "llama-4g.tsv")) else []
    tried = ", ".join(f"-ngl {t[0]}: {t[1] or '?'} MiB" for t in tries)
    if fit:
        tg = llama("Q4_K_M", "tg", 32, f"llama-4g-ngl{fit}.jsonl")
        cell = f"tg32 {tg[0]:.2f} ± {tg[1]:.2f} tok/s" if tg else "no tg32 result"
        ratio = f"; INT4 at 4 GiB x{r4['tokens_per_s'] / tg[0]:.2f}" if tg and r4 else ""
        print(f"- llama.cpp Q4_K_M split by layers at the same memory: -ngl {fit} on the GPU, the rest on "
              f"the CPU, {cell}, peak VRAM {peak_cell('llama-4g-ngl' + fit)}{ratio} (tries: {tried})")
    else:
        print(f"- llama.cpp Q4_K_M split by layers: no -ngl fitted the limit (tries: {tried or 'none'})")

# Measurements that ran beside llama.cpp's build or GGUF conversion (vram.sh's note_concurrency):
# those jobs take the host's cores and memory, so the CPU layers' speed there is not the quiet host's.
try:
    busy = [l.split("\t") for l in open(os.path.join(res, "concurrency.tsv")).read().splitlines()]
except OSError:
    busy = []
for b in busy:
    if len(b) > 1:
        print(f"- WARNING: {b[0]} ran beside llama.cpp's {' and '.join(b[1:])} (background jobs on the same host)")

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
