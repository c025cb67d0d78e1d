#!/usr/bin/env python3
"""The summary of bench/arch_bench.sh: each figure beside its roofline, the other engines and the
issue's targets, and parity (min cosine >= 0.999 against transformers' bf16 logits). Markdown on stdout.
usage: arch_summary.py RESULTS_DIR MODEL"""
import json, os, sys

res, model = sys.argv[1], sys.argv[2]
# Per model: its title, the reference prompt's length, and the targets against llama.cpp (decode
# ratio, decode tok/s or None, prefill pp2048 ratio).
MODELS = {
    "qwen3.5-0.8b": ("Qwen3.5-0.8B", 320, 1.5, 1000, 2.0),   # issue #17
    "gemma4-e2b": ("Gemma-4-E2B", 600, 1.3, None, 1.5),      # issue #18
}
title, ref_len, tg_ratio, tg_abs, pp_ratio = MODELS[model]


def load(name):
    p = os.path.join(res, name)
    try:
        return json.load(open(p))
    except Exception as e:  # a step that failed or did not run: say so in the table
        print(f"note: {name}: {e}", file=sys.stderr)
        return None


def llama(test):
    """llama-bench's mean tok/s and sd for pp<N> or tg<N> (jsonl, one object per test)."""
    p = os.path.join(res, "llama-bench.jsonl")
    if not os.path.exists(p):
        return None
    for line in open(p):
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        kind, n = test[:2], int(test[2:])
        if (kind == "pp" and r.get("n_prompt") == n and r.get("n_gen") == 0) or \
           (kind == "tg" and r.get("n_gen") == n and r.get("n_prompt") == 0):
            return r["avg_ts"], r["stddev_ts"]
    return None


bench, hf, doctor = load("bench.json"), load("hf.json"), load("doctor.json")
print(f"# {title} shape (random bf16 weights), ThinTensor beside llama.cpp and transformers\n")
if bench:
    print(f"{bench['backend']}, profile {bench['profile']}, {bench['params'] / 1e6:.1f} M params, "
          f"peak VRAM {bench['peak_vram_bytes'] / 2**30:.2f} GiB (ThinTensor); device copy "
          f"{bench['device_copy_gbs']:.0f} GB/s, GEMM {bench['gemm_tflops']:.0f} TFLOP/s measured\n")
print("| test | ThinTensor tok/s | roofline | llama.cpp tok/s | ratio | target | transformers tok/s | ratio |")
print("|---|---:|---|---:|---:|---|---:|---:|")
rows = {r["test"]: r for r in (bench or {}).get("results", [])}
for test, target in (("tg128", tg_ratio), ("pp512", None), ("pp2048", pp_ratio)):
    r = rows.get(test)
    ours = r["tokens_per_s"] if r else None
    if r and "roofline_tokens_per_s" in r:
        roof = f"{100 * ours / r['roofline_tokens_per_s']:.1f}% of {r['roofline_tokens_per_s']:.0f} (bytes / {r['roofline_gbs']:.0f} GB/s)"
    elif r:
        roof = f"{100 * r['tflops'] / r['peak_tflops']:.1f}% of {r['peak_tflops']:.0f} TFLOP/s ({r['tflops']:.1f})"
    else:
        roof = "-"
    ll = llama(test)
    hf_ts = None
    if hf:
        hf_ts = hf.get("hf_decode_tok_s") if test.startswith("tg") else hf.get("hf_prefill_tok_s") if test == "pp2048" else None
    ratio = f"x{ours / ll[0]:.2f}" if ours and ll else "-"
    met = "-" if target is None else ("not measured" if not (ours and ll) else "met" if ours / ll[0] >= target else "not met") + f" (x{target})"
    if test == "tg128" and ours and tg_abs:
        met += f"; {'met' if ours >= tg_abs else 'not met'} ({tg_abs:,} tok/s)"
    ours_s = f"{ours:,.1f} ± {r['sd']:.1f}" if r else "-"
    ll_s = f"{ll[0]:,.1f} ± {ll[1]:.1f}" if ll else "-"
    hf_s = f"{hf_ts:,.1f}" if hf_ts else "-"
    hf_ratio = f"x{ours / hf_ts:.1f}" if ours and hf_ts else "-"
    print(f"| {test} | {ours_s} | {roof} | {ll_s} | {ratio} | {met} | {hf_s} | {hf_ratio} |")
if hf:
    print(f"\ntransformers {hf.get('transformers')} (torch {hf.get('torch')}): decode is eager `generate` (tg32), "
          f"prefill one forward pass over {hf.get('hf_prefill_len')} tokens" +
          ("; its delta-rule kernels fall back to torch." if model.startswith("qwen3.5") else "."))
plan = (load("plan.json") or {}).get("plan")
if plan:
    where = [f"{b['name']} {b['placement']}" for b in plan.get("blocks", []) if not b["name"].startswith("layer.")]
    ram = "; ".join(f"{l['what']} {l['bytes'] / 1e9:.2f} GB" for l in plan.get("ram", []))
    print(f"\nplan: {plan['n_resident_layers']} of {plan['n_layers']} layers resident, VRAM {plan['vram_used'] / 1e9:.2f} GB; "
          f"{', '.join(where)}" + (f"; host memory: {ram}" if ram else ""))

print("\n## Parity\n")
print("| ThinTensor | against | positions | min cosine | max abs dlogit | mean KL | top-1 | bound 0.999 |")
print("|---|---|---:|---:|---:|---:|---:|---|")
for name, ours, ref in (("ref-cuda-logits_bf16.json", "cuda, bf16 archive", f"transformers bf16 logits ({ref_len} tokens)"),
                        ("ref-cuda-logits_f32.json", "cuda, bf16 archive", "transformers f32 arithmetic, same weights"),
                        ("ref-cpu-logits_f32.json", "cpu, bf16 archive", "transformers f32 arithmetic, same weights")):
    v = load(name)
    if v:
        print(f"| {ours} | {ref} | {v['positions']} | {v['min_cosine']:.8f} | {v['max_abs_diff']:.3e} | "
              f"{v['mean_kl']:.3e} | {v['top1_agreement']:.4f} | {'met' if v['min_cosine'] >= 0.999 else 'not met'} |")
for dt in ("bfloat16", "float32", "quick"):
    v = load(f"hf-model-{dt}.json") if dt != "quick" or model == "gemma4-e2b" else None
    if v:
        o = v["overall"]
        what = "the archive's dtype, --suite quick (the seed's form)" if dt == "quick" else f"{dt}, --suite full"
        print(f"| cuda, bf16 archive | live transformers {what} ({len(v['prompts'])} prompts), pass {v.get('pass')} | {o['positions']} | "
              f"{o['min_cosine']:.8f} ({o['min_cosine_prompt']}) | {o['max_abs_diff']:.3e} | {o['mean_kl']:.3e} | "
              f"{o['top1_agreement']:.4f} | {'met' if o['min_cosine'] >= 0.999 else 'not met'} |")
        for p in v["prompts"]:
            base = p.get("f32_baseline")
            if base:
                print(f"|  - {p['name']} ({p['tokens']} tokens) | f32 baseline | | ours vs f32 "
                      f"{base['ours_min_cosine']:.6f}, transformers bf16 vs f32 {base['transformers_bf16_min_cosine']:.6f} | | | | "
                      f"within noise: {base['cosine_within_noise']} |")
p = os.path.join(res, "hf-bf16-vs-f32.txt")
if os.path.exists(p):
    print(f"\n{open(p).read().strip()}")
