#!/usr/bin/env python3
"""Tables of bench/moe_bench.sh's results: a Qwen3-30B-A3B-shaped MoE (random bf16 weights) on
ThinTensor, llama.cpp and transformers, resident and under 8 GiB / 4 GiB of VRAM. Every figure is
set beside its bound: decode against the active-bytes roofline (the bytes one token reads, over the
device copy bandwidth measured in the same run), the budget runs also against the PCIe bound of the
expert cache, and the cache's measured hit rate beside what an LRU of the same size would hit under
skewed (Zipf) routing, which random weights do not have. Missing pieces are reported as missing,
never filled in.

usage: moe_summary.py RESULTS_DIR [--md FILE] [--json FILE]
       moe_summary.py --simulate SLOTS [--layers 16] [--experts 128] [--top-k 8]   (the LRU replay alone)
"""
import argparse, bisect, json, os, random, sys
from collections import OrderedDict

BUDGETS = ["8GiB", "4GiB"]
FALLBACK_BW = 4.2e12  # B/s, the H200's device copy as measured here before (KINDS.md: ~4.3 TB/s)


# ---------------------------------------------------------------------------------------------
# The LRU replay: per token and layer, top_k distinct experts drawn from a Zipf(s) popularity
# (rank r has weight 1/r^s; s = 0 is uniform), all layers sharing one LRU of `slots` entries keyed
# by (layer, expert), as the engine's cache is. Tokens are independent (no temporal locality beyond
# the popularity skew), so this is a floor for real traces with locality and a fair model of the
# skew alone. Drawing successively with duplicates rejected is sampling without replacement in
# proportion to the weights, the distribution of a softmax top-k under Gumbel noise.

def lru_hit_rate(slots, s, n_layers=16, n_experts=128, top_k=8, warm_tokens=500, tokens=3000, seed=0):
    rng = random.Random(seed)
    weights = [1.0 / (r + 1) ** s for r in range(n_experts)]
    cdf, acc = [], 0.0
    for w in weights:
        acc += w
        cdf.append(acc)
    total = cdf[-1]
    cache = OrderedDict()
    hits = lookups = 0
    for t in range(warm_tokens + tokens):
        for layer in range(n_layers):
            if s == 0:
                picked = rng.sample(range(n_experts), top_k)
            else:
                picked, seen = [], set()
                while len(picked) < top_k:
                    e = bisect.bisect_left(cdf, rng.random() * total)
                    if e < n_experts and e not in seen:
                        seen.add(e)
                        picked.append(e)
            for e in picked:
                key = layer * n_experts + e
                hit = key in cache
                if hit:
                    cache.move_to_end(key)
                else:
                    cache[key] = True
                    if len(cache) > slots:
                        cache.popitem(last=False)
                if t >= warm_tokens:
                    lookups += 1
                    hits += hit
    return hits / lookups if lookups else 0.0


# ---------------------------------------------------------------------------------------------
# Sizes from config.json (the checkpoint the run made), in bytes of bf16.

def moe_sizes(cfg, elem=2):
    h = cfg["hidden_size"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or h // nh
    n_layers = cfg["num_hidden_layers"]
    n_exp = cfg.get("num_experts") or cfg.get("num_local_experts")
    top_k, inter, vocab = cfg["num_experts_per_tok"], cfg["moe_intermediate_size"], cfg["vocab_size"]
    attn = h * nh * hd + 2 * h * nkv * hd + nh * hd * h
    norms = 2 * h + 2 * hd  # input / post-attention norms, q_norm, k_norm
    router = n_exp * h
    dense_layer = (attn + norms + router) * elem
    expert = 3 * h * inter * elem
    head = vocab * h * elem
    embd_row = h * elem
    dense = n_layers * dense_layer + head + h * elem + embd_row  # + final norm + one embedding row
    return {
        "n_layers": n_layers, "n_experts": n_exp, "top_k": top_k,
        "expert_bytes": expert, "layer_experts_bytes": n_exp * expert, "dense_layer_bytes": dense_layer,
        "dense_active_bytes": dense, "active_bytes": dense + n_layers * top_k * expert,
        "model_bytes": n_layers * (dense_layer + n_exp * expert) + 2 * head + h * elem,
        "kv_bytes_per_position": 2 * n_layers * nkv * hd * elem,
    }


# ---------------------------------------------------------------------------------------------
# Readers: each returns None (or {}) for what is absent, never a made-up value.

def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception:
        return None


def load_jsonl(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        rows.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return rows


def load_vram(res):
    """vram.tsv: name, baseline MiB, max MiB, peak (max - baseline) MiB, samples."""
    out = {}
    try:
        for line in open(os.path.join(res, "vram.tsv")):
            f = line.split()
            if len(f) >= 4 and f[0] != "name":
                out[f[0]] = {"baseline_mib": int(f[1]), "max_mib": int(f[2]), "peak_mib": int(f[3])}
    except (OSError, ValueError):
        pass
    return out


def tt_results(b):
    """ThinTensor bench JSON -> {test: result}."""
    return {r.get("test"): r for r in (b or {}).get("results", []) if isinstance(r, dict)}


def find_expert_cache(b):
    """The expert_cache object wherever the bench JSON carries it: top level, or in a result row."""
    if not isinstance(b, dict):
        return None
    if isinstance(b.get("expert_cache"), dict):
        return b["expert_cache"]
    for r in b.get("results", []):
        if isinstance(r, dict) and isinstance(r.get("expert_cache"), dict):
            return r["expert_cache"]
    return None


def llama_rows(rows):
    """llama-bench jsonl -> {"pp512": ts, "tg128": ts, ...} (avg_ts, stddev_ts)."""
    out = {}
    for r in rows:
        npp, ntg = int(r.get("n_prompt", 0)), int(r.get("n_gen", 0))
        name = f"pp{npp}" if npp and not ntg else f"tg{ntg}" if ntg and not npp else f"pp{npp}+tg{ntg}"
        out[name] = {"tokens_per_s": float(r.get("avg_ts", 0)), "sd": float(r.get("stddev_ts", 0)),
                     "n_cpu_moe": r.get("n_cpu_moe"), "n_gpu_layers": r.get("n_gpu_layers")}
    return out


def first_tg(d):
    for k, v in d.items():
        if k and k.startswith("tg"):
            return k, v
    return None, None


def pcie_note(b):
    """A budget run is bound by the expert cache's copies, not HBM: its share of that bound too."""
    f = (find_expert_cache(b) or {}).get("pcie_bound_fraction")
    return f"; {100 * f:.0f}% of the PCIe bound" if isinstance(f, (int, float)) else ""


def fmt(v, nd=1, unit=""):
    return "-" if v is None else f"{v:,.{nd}f}{unit}"


def ratio(a, b):
    return f"x{a / b:.2f}" if a and b else "-"


# ---------------------------------------------------------------------------------------------

def summarize(res):
    S = {"notes": []}
    ck = load_json(os.path.join(res, "hf-ckpt.json")) or {}
    cfg = ck.get("config") or load_json(os.path.join(res, "config.json"))
    sizes = moe_sizes(cfg) if cfg else None
    S["sizes"] = sizes
    vram = load_vram(res)
    doctor = load_json(os.path.join(res, "doctor.json"))
    g = (doctor or {}).get("gpus") or [{}]
    d2d = g[0].get("d2d_gbs") if isinstance(g[0], dict) else None
    h2d = g[0].get("h2d_pinned_gbs") if isinstance(g[0], dict) else None
    tt = {b: load_json(os.path.join(res, f"tt-bench-{b}.json")) for b in ["resident"] + BUDGETS}
    if d2d and d2d > 0:
        bw, bw_src = d2d * 1e9, "thintensor doctor --json d2d (same run)"
    elif (tt["resident"] or {}).get("device_copy_gbs"):
        bw, bw_src = tt["resident"]["device_copy_gbs"] * 1e9, "thintensor bench device_copy_gbs (same run; doctor absent)"
    else:
        bw, bw_src = FALLBACK_BW, "4.2e12 B/s assumed (no measurement in this run)"
    S["bandwidth"] = {"bytes_per_s": bw, "source": bw_src, "h2d_pinned_gbs": h2d}

    lines = ["# MoE benchmark: Qwen3-30B-A3B shape, 16 of 48 layers, random bf16 weights", ""]
    if ck:
        lines.append(f"- checkpoint: {ck.get('params', 0) / 1e9:.2f} B params, transformers {ck.get('transformers')}, "
                     f"torch {ck.get('torch')}, {ck.get('gpu')}; {ck.get('per_expert_tensors', '?')} per-expert tensors "
                     f"saved (init {ck.get('init_s', 0):.1f} s, save {ck.get('save_s', 0):.1f} s)")
    else:
        lines.append("- checkpoint: hf-ckpt.json missing (the checkpoint step failed: see moe.log)")
    if sizes:
        roof = bw / sizes["active_bytes"]
        lines.append(f"- active bytes per token: dense {sizes['dense_active_bytes'] / 1e9:.3f} GB (attention, norms, router of "
                     f"{sizes['n_layers']} layers + head + one embedding row) + {sizes['n_layers']} x {sizes['top_k']} experts x "
                     f"{sizes['expert_bytes'] / 1e6:.2f} MB = {sizes['active_bytes'] / 1e9:.3f} GB of {sizes['model_bytes'] / 1e9:.2f} GB")
        lines.append(f"- device copy bandwidth {bw / 1e9:,.0f} GB/s ({bw_src}): decode roofline {roof:,.0f} tok/s"
                     + (f"; host-to-device pinned {h2d:.1f} GB/s" if h2d else ""))
    for n in (S["notes"]):
        lines.append(f"- {n}")
    conc = os.path.join(res, "concurrency.tsv")
    if os.path.exists(conc):
        busy = [l.split("\t")[0] for l in open(conc) if "\tbuild" in l or "\tgguf" in l]
        if busy:
            lines.append(f"- measured while the llama.cpp build (nice 15) or the GGUF conversion still ran: {', '.join(busy)}")
    lines.append("")

    # llama.cpp: resident, and per budget the run that fitted with the fewest CPU layers.
    ll = {"resident": llama_rows(load_jsonl(os.path.join(res, "llama-resident.jsonl")))}
    ll_pick = {}
    for b in BUDGETS:
        search = load_json(os.path.join(res, f"llama-search-{b}.json")) or {}
        ll_pick[b] = search
        n = search.get("chosen")
        ll[b] = llama_rows(load_jsonl(os.path.join(res, f"llama-ncmoe{n}-{b}.jsonl"))) if n is not None else {}
    hf_res = {"tg": ck.get("hf_decode_tok_s"), "pp": ck.get("hf_prefill_tok_s"), "pp_len": ck.get("hf_prefill_len")}
    acc = {b: load_json(os.path.join(res, f"hf-offload-{b}.json")) for b in BUDGETS}

    rows = []
    lines.append("| engine | configuration | decode tok/s | pp512 tok/s | pp2048 tok/s | peak VRAM (nvidia-smi) "
                 "| decode vs llama.cpp | pp512 vs llama.cpp | decode % of active-bytes roofline |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")

    def ll_ref(case, key):
        r = ll.get(case, {})
        if key == "tg":
            return first_tg(r)[1]["tokens_per_s"] if first_tg(r)[1] else None
        return r.get(key, {}).get("tokens_per_s")

    for case in ["resident"] + BUDGETS:
        b = tt[case]
        r = tt_results(b)
        tgname, tg = first_tg(r)
        tgv = tg.get("tokens_per_s") if tg else None
        pp512 = r.get("pp512", {}).get("tokens_per_s")
        pp2048 = r.get("pp2048", {}).get("tokens_per_s")
        vm = vram.get(f"tt-{case}", {}).get("peak_mib")
        roof = None
        if sizes and tgv:
            n_gen = int(tgname[2:].split("@")[0]) if tgname else 1
            kv = sizes["kv_bytes_per_position"] * (n_gen / 2 + 1)
            roof = bw / (sizes["active_bytes"] + kv)
        row = {"engine": "ThinTensor", "case": case, "decode_test": tgname, "decode_tok_s": tgv, "pp512_tok_s": pp512,
               "pp2048_tok_s": pp2048, "peak_vram_mib": vm, "roofline_tok_s": roof,
               "error": None if b else "bench JSON missing (see tt-bench-%s.err)" % case}
        rows.append(row)
        cfgname = case if case == "resident" else f"--vram-budget {case}"
        lines.append(f"| ThinTensor | {cfgname}{'' if b else ' (failed)'} | {fmt(tgv)} {tgname or ''} | {fmt(pp512, 0)} | {fmt(pp2048, 0)} "
                     f"| {fmt(vm / 1024 if vm else None, 2, ' GiB')} | {ratio(tgv, ll_ref(case, 'tg'))} | {ratio(pp512, ll_ref(case, 'pp512'))} "
                     f"| {fmt(100 * tgv / roof if roof and tgv else None, 1, '%')} of {fmt(roof, 0)}{pcie_note(b)} |")
    for case in ["resident"] + BUDGETS:
        r = ll.get(case, {})
        tgname, tg = first_tg(r)
        tgv = tg["tokens_per_s"] if tg else None
        vm = vram.get(f"llama-resident" if case == "resident" else f"llama-ncmoe{ll_pick[case].get('chosen')}-{case}", {}).get("peak_mib")
        if case == "resident":
            cfgname = "-ngl 99 -fa 1"
        elif ll_pick[case].get("chosen") is not None:
            cfgname = f"-ngl 99 --n-cpu-moe {ll_pick[case]['chosen']}" + ("" if ll_pick[case].get("fits") else " (over budget)")
        else:
            cfgname = f"{case}: not measured"
        rows.append({"engine": "llama.cpp", "case": case, "config": cfgname, "decode_test": tgname, "decode_tok_s": tgv,
                     "pp512_tok_s": r.get("pp512", {}).get("tokens_per_s"), "pp2048_tok_s": r.get("pp2048", {}).get("tokens_per_s"),
                     "peak_vram_mib": vm})
        lines.append(f"| llama.cpp bf16 | {cfgname} | {fmt(tgv)} {tgname or ''} | {fmt(r.get('pp512', {}).get('tokens_per_s'), 0)} "
                     f"| {fmt(r.get('pp2048', {}).get('tokens_per_s'), 0)} | {fmt(vm / 1024 if vm else None, 2, ' GiB')} "
                     f"| {'x1' if tgv else '-'} | {'x1' if r.get('pp512') else '-'} | - |")
    # nvidia-smi's peak of that process includes the f32 copy made for the reference; the
    # allocator's peak over the speed runs alone is the comparable figure.
    alloc = ck.get("hf_speed_max_vram_allocated")
    vm = alloc / 2**20 if alloc else None
    lines.append(f"| transformers bf16 | resident, eager generate | {fmt(hf_res['tg'])} | "
                 f"{fmt(hf_res['pp'], 0) if hf_res['pp_len'] == 512 else '-'} | {fmt(hf_res['pp'], 0) if hf_res['pp_len'] == 2048 else '-'} "
                 f"| {fmt(vm / 1024 if vm else None, 2, ' GiB')} (torch max allocated) | {ratio(hf_res['tg'], ll_ref('resident', 'tg'))} "
                 f"| {ratio(hf_res['pp'], ll_ref('resident', 'pp512')) if hf_res['pp_len'] == 512 else '-'} | - |")
    rows.append({"engine": "transformers", "case": "resident", "decode_tok_s": hf_res["tg"], "prefill_tok_s": hf_res["pp"],
                 "prefill_len": hf_res["pp_len"], "peak_vram_mib": vm})
    for case in BUDGETS:
        a = acc[case] or {}
        vm = vram.get(f"hf-offload-{case}", {}).get("peak_mib")
        tgv, ppv = a.get("decode_tok_s"), a.get("prefill_tok_s")
        note = a.get("error") or ("" if a else "no result (failed or timed out before loading)")
        if a and "decode_tok_s" not in a:
            note = f"loaded in {a.get('load_s', 0):.0f} s, no decode within the time cap"
        if a.get("decode_tokens_made") is not None:
            note = f"{a['decode_tokens_made']} tokens in the {a.get('decode_stopped_by_max_time_s')} s cap"
        rows.append({"engine": "transformers+accelerate", "case": case, "decode_tok_s": tgv, "pp512_tok_s": ppv,
                     "peak_vram_mib": vm, "note": note})
        lines.append(f"| transformers + accelerate | max_memory {case}{' (' + note + ')' if note else ''} | {fmt(tgv, 2)} | {fmt(ppv, 0)} | - "
                     f"| {fmt(vm / 1024 if vm else None, 2, ' GiB')} | {ratio(tgv, ll_ref(case, 'tg'))} | {ratio(ppv, ll_ref(case, 'pp512'))} | - |")
    S["rows"] = rows
    lines.append("")
    lines.append("Ratios are against llama.cpp at the same VRAM budget in this run. Peak VRAM is the largest "
                 "`nvidia-smi memory.used` sample (every 200 ms) minus the reading before the process started; "
                 "it includes the CUDA context.")
    lines.append("")

    # Expert cache of the budget runs, measured and replayed.
    lines.append("## Expert cache under a VRAM budget (ThinTensor)")
    lines.append("")
    lines.append("| budget | slots | of experts | hits | misses | hit rate (random weights) | LRU replay: uniform | Zipf s=1.0 | Zipf s=1.2 "
                 "| PCIe GB/token | PCIe GB/s | % of PCIe bound | PCIe bound at Zipf 1.0 / 1.2 |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    S["expert_cache"] = {}
    for case in BUDGETS:
        ec = find_expert_cache(tt[case])
        if not ec:
            why = "bench JSON missing" if not tt[case] else "no expert_cache object in the bench JSON"
            if not sizes:
                lines.append(f"| {case} | ({why}) |" + " |" * 12)
                S["expert_cache"][case] = None
                continue
            # No measured slot count: replay at an estimate (the budget less every dense tensor, the
            # whole embedding table and 1 GiB of context and buffers), labelled as such.
            budget = int(case[:-3]) * 2**30
            dense_all = sizes["model_bytes"] - sizes["n_layers"] * sizes["layer_experts_bytes"]
            est = max(0, int((budget - dense_all - 2**30) // sizes["expert_bytes"]))
            ec = {"slots": est, "estimated": f"slots estimated from the budget ({why})"}
        slots = ec.get("slots")
        total = ec.get("experts") or (sizes["n_layers"] * sizes["n_experts"] if sizes else None)
        sim = {}
        if isinstance(slots, (int, float)) and slots > 0 and sizes:
            for s in (0.0, 1.0, 1.2):
                sim[s] = lru_hit_rate(int(slots), s, sizes["n_layers"], sizes["n_experts"], sizes["top_k"])
        bounds = []
        if sizes and h2d:
            for s in (1.0, 1.2):
                if s in sim:
                    miss_bytes = (1 - sim[s]) * sizes["n_layers"] * sizes["top_k"] * sizes["expert_bytes"]
                    bounds.append(f"{h2d * 1e9 / miss_bytes:.0f}" if miss_bytes > 0 else "inf")
        S["expert_cache"][case] = {"measured": ec, "lru_replay": {str(k): v for k, v in sim.items()}}
        g_ = lambda k, nd=3: fmt(ec.get(k), nd) if isinstance(ec.get(k), (int, float)) else "-"
        pbt = ec.get("pcie_bytes_per_token")
        lines.append(f"| {case} | {g_('slots', 0)}{' (estimate: ' + ec['estimated'] + ')' if ec.get('estimated') else ''} | {fmt(total, 0) if total else '-'} | {g_('hits', 0)} | {g_('misses', 0)} "
                     f"| {fmt(100 * ec['hit_rate'], 1, '%') if isinstance(ec.get('hit_rate'), (int, float)) else '-'} "
                     f"| {fmt(100 * sim[0.0], 1, '%') if 0.0 in sim else '-'} | {fmt(100 * sim[1.0], 1, '%') if 1.0 in sim else '-'} "
                     f"| {fmt(100 * sim[1.2], 1, '%') if 1.2 in sim else '-'} "
                     f"| {fmt(pbt / 1e9, 3) if isinstance(pbt, (int, float)) else '-'} | {g_('pcie_gbs', 1)} "
                     f"| {fmt(100 * ec['pcie_bound_fraction'], 1, '%') if isinstance(ec.get('pcie_bound_fraction'), (int, float)) else '-'} "
                     f"| {' / '.join(bounds) + ' tok/s' if bounds else '-'} |")
    lines.append("")
    lines.append("The replay draws, per token and layer, 8 distinct experts of 128 from a Zipf(s) popularity (s = 0: uniform, "
                 "which is what random router weights give) through one LRU of the run's slot count shared by all layers, "
                 "tokens independent; the PCIe bound at Zipf s is h2d pinned bandwidth / (misses per token x expert bytes).")
    lines.append("")

    # Side facts: llama.cpp's N search, validation, plans.
    for case in BUDGETS:
        s = ll_pick.get(case) or {}
        if s.get("tries"):
            tries = ", ".join(f"N={t['n']}: {t['peak_mib'] / 1024:.2f} GiB{'' if t['fits'] else ' (over)'}" for t in s["tries"]
                              if isinstance(t.get("peak_mib"), (int, float)))
            lines.append(f"- llama.cpp {case}: --n-cpu-moe search {tries}; first guess from sizes N={s.get('guess')}")
    for key in ("logits_bf16", "logits_f32"):
        v = load_json(os.path.join(res, f"tt-validate-{key}.json"))
        if v:
            keys = ["min_cosine", "max_abs_diff", "top1_agreement", "mean_kl", "greedy_match", "greedy_expected"]
            lines.append(f"- ThinTensor validate vs transformers {key}: " + ", ".join(f"{k} {v[k]}" for k in keys if k in v))
    for case in ["resident"] + BUDGETS:
        b = tt[case]
        if b:
            lines.append(f"- ThinTensor {case}: {b.get('backend', '')}; {b.get('plan', '')} (load {b.get('load_s', 0):.1f} s, "
                         f"bench's own peak VRAM {b.get('peak_vram_bytes', 0) / 2**30:.2f} GiB)")
    S["markdown"] = "\n".join(lines) + "\n"
    return S


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="?")
    ap.add_argument("--md")
    ap.add_argument("--json")
    ap.add_argument("--simulate", type=int, metavar="SLOTS")
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--experts", type=int, default=128)
    ap.add_argument("--top-k", type=int, default=8)
    a = ap.parse_args()
    if a.simulate:
        n = a.layers * a.experts
        for s in (0.0, 1.0, 1.2):
            h = lru_hit_rate(a.simulate, s, a.layers, a.experts, a.top_k)
            print(f"slots {a.simulate} of {n} experts, Zipf s={s}: LRU hit rate {100 * h:.1f}%"
                  + (f" (slots/experts {100 * min(1, a.simulate / n):.1f}%: the 8 draws of a layer are distinct and the layers come in turn, "
                     "so LRU hits a little less)" if s == 0 else ""), flush=True)
        return 0
    if not a.results:
        ap.error("RESULTS_DIR or --simulate SLOTS")
    S = summarize(a.results)
    print(S["markdown"], end="")
    if a.md:
        open(a.md, "w").write(S["markdown"])
    if a.json:
        json.dump({k: v for k, v in S.items() if k != "markdown"}, open(a.json, "w"), indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
