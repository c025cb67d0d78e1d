#!/usr/bin/env python3
"""Tables of bench/offload_bench.sh's results (issue #16): the Llama-3-8B shape (random bf16 weights)
under --vram-budget 8GiB and 4GiB with 16 and 8 threads, ThinTensor (layers that do not fit VRAM
computed on the CPU and/or streamed over PCIe) against llama.cpp at the -ngl N that fits the same
peak VRAM. Each figure is set beside its target and its bound:
  decode   ThinTensor / llama.cpp >= 1.4x;  prefill (pp512, pp2048) >= 6x
  planner  |measured - predicted| / measured <= 15%
  bound    the combined bound: non-resident bytes per token / (h2d pinned + host read bandwidth),
           both measured in the same run; ThinTensor at >= 85% of it
  VRAM     peak (nvidia-smi, the process's whole footprint) within the budget
Missing pieces are reported as missing, never filled in; fields the engine may not print yet are
read under each name they may have (see FIELDS below) and their absence is said.

usage: offload_summary.py RESULTS_DIR [--md FILE] [--json FILE]
       offload_summary.py --show-doctor RESULTS_DIR | --show-plan FILE | --show-bench FILE | --show-llama FILE
       (the --show forms print one result file's essentials for the run's log)
"""
import argparse, json, os, sys

BUDGETS = ["8GiB", "4GiB"]
TARGET_DECODE, TARGET_PREFILL, TARGET_ERROR, TARGET_BOUND = 1.4, 6.0, 0.15, 0.85
VRAM_TOLERANCE = 1.02  # llama.cpp's N may peak up to 2% over its target (the search's rule)

# The names each figure may have in `thintensor plan --json` (under "plan") and `bench --json`:
# the first present wins. The plan's C++ members are decode_tps / pcie_bytes / cpu_bytes /
# n_cpu_layers; the JSON of today's plan spells the first two as below.
FIELDS = {
    "predicted_decode": ["predicted_decode_tokens_per_s", "decode_tps", "predicted_decode_tps"],
    "pcie_bytes": ["pcie_bytes_per_token", "pcie_bytes"],
    "cpu_bytes": ["cpu_bytes_per_token", "cpu_bytes", "host_bytes_per_token", "cpu_read_bytes_per_token"],
    "n_cpu_layers": ["n_cpu_layers", "cpu_layers"],
    "n_resident_layers": ["n_resident_layers"],
}
STREAMED = {"registered", "bounce", "disk"}  # placements copied over PCIe each pass


# ---------------------------------------------------------------------------------------------
# Readers: each returns None (or {} / []) for what is absent.

# The JSON and JSON-lines readers are the MoE summary's (bench/moe_summary.py, beside this file).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from moe_summary import load_json, load_jsonl  # noqa: E402


def load_tsv(path):
    """A tab-separated file with a header line -> list of dicts (strings)."""
    try:
        lines = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
    except OSError:
        return []
    if not lines:
        return []
    head = lines[0]
    return [dict(zip(head, l)) for l in lines[1:]]


def load_vram(res):
    """vram.tsv: name, baseline MiB, max MiB, peak (max - baseline) MiB, samples."""
    out = {}
    for r in load_tsv(os.path.join(res, "vram.tsv")):
        try:
            out[r["name"]] = {"baseline_mib": int(r["baseline_mib"]), "max_mib": int(r["max_mib"]),
                              "peak_mib": int(r["peak_mib"]), "samples": int(r.get("samples") or 0)}
        except (KeyError, ValueError):
            pass
    return out


def num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def first(d, names):
    """The first of `names` present in d as a number: (value, name), or (None, None)."""
    if isinstance(d, dict):
        for n in names:
            if num(d.get(n)) is not None:
                return d[n], n
    return None, None


def budget_mib(b):
    return int(b[:-3]) * 1024 if b.endswith("GiB") and b[:-3].isdigit() else None


# ---------------------------------------------------------------------------------------------
# The doctor's ceilings: the record ($THINTENSOR_HOME/doctor.json, copied as doctor-record.json)
# first, then doctor --json's stdout. The host part: "host": {"read_gbs", "gemv": [{"threads",
# "gemv_gbs"}], "threads", "cpu", "isa", "date"}.

def gemv_at(rates, n):
    """The GEMV rate at n threads from [(threads, gbs)] ascending: linear between the measured
    counts, proportional below the smallest, the largest's above it (as the planner reads it)."""
    if not rates:
        return None
    if n <= rates[0][0]:
        return rates[0][1] * n / rates[0][0]
    for (ta, ga), (tb, gb) in zip(rates, rates[1:]):
        if n <= tb:
            return ga + (gb - ga) * (n - ta) / (tb - ta)
    return rates[-1][1]


def doctor_ceilings(res):
    c = {"h2d_pinned_gbs": None, "d2d_gbs": None, "gemm_tflops": None, "host": None, "host_read_gbs": None,
         "gemv": [], "source": None, "host_source": None}
    for name in ("doctor-record.json", "doctor.json"):
        d = load_json(os.path.join(res, name))
        if not isinstance(d, dict):
            continue
        g = (d.get("gpus") or [None])[0]
        if isinstance(g, dict) and c["h2d_pinned_gbs"] is None and num(g.get("h2d_pinned_gbs")):
            c.update(h2d_pinned_gbs=g["h2d_pinned_gbs"], d2d_gbs=num(g.get("d2d_gbs")),
                     gemm_tflops=num(g.get("gemm_bf16_tflops")), source=name + (f" of {d['date']}" if d.get("date") else ""))
        h = d.get("host")
        if isinstance(h, dict) and c["host"] is None:
            c["host"] = h
            c["host_source"] = name
            c["host_read_gbs"] = first(h, ["read_gbs", "host_read_gbs"])[0]
            rates = []
            for r in h.get("gemv") or []:
                if isinstance(r, dict) and num(r.get("threads")) and num(first(r, ["gemv_gbs", "gbs"])[0]) is not None:
                    rates.append((r["threads"], first(r, ["gemv_gbs", "gbs"])[0]))
            c["gemv"] = sorted(rates)
    return c


# ---------------------------------------------------------------------------------------------
# The plan and the bench JSON.

def plan_info(pj):
    """thintensor plan --json -> what the tables need; None when there is no plan."""
    if not isinstance(pj, dict):
        return None
    p = pj.get("plan") if isinstance(pj.get("plan"), dict) else pj
    blocks = [x for x in p.get("blocks") or [] if isinstance(x, dict)]
    layers = [x for x in blocks if str(x.get("name", "")).startswith("layer.")]
    count = lambda pred: sum(1 for x in layers if pred(x.get("placement")))
    nbytes = lambda pred: sum(num(x.get("bytes")) or 0 for x in blocks if pred(x.get("placement")))
    info = {"context": pj.get("context"), "gpu": pj.get("gpu"), "n_layers": p.get("n_layers"),
            "vram_used": num(p.get("vram_used")), "vram_budget": num(p.get("vram_budget")),
            "bandwidths": p.get("bandwidths") if isinstance(p.get("bandwidths"), dict) else {},
            "notes": p.get("notes") or [], "warnings": p.get("warnings") or [], "missing": []}
    for key in ("predicted_decode", "pcie_bytes", "cpu_bytes", "n_cpu_layers", "n_resident_layers"):
        v, name = first(p, FIELDS[key])
        info[key], info[key + "_field"] = v, name
    # From the blocks: resident, streamed over PCIe, computed on the CPU.
    info["blocks_resident"] = count(lambda pl: pl == "vram") if layers else None
    info["blocks_streamed"] = count(lambda pl: pl in STREAMED) if layers else None
    info["blocks_cpu"] = count(lambda pl: pl == "cpu") if layers else None
    # Non-resident bytes one decode token reads: every block neither in VRAM nor host-mapped (the
    # embedding: one row per token) nor in the expert cache (MoE only).
    info["blocks_streamed_bytes"] = nbytes(lambda pl: pl in STREAMED) if blocks else None
    info["blocks_cpu_bytes"] = nbytes(lambda pl: pl == "cpu") if blocks else None
    if info["n_cpu_layers"] is None and info["blocks_cpu"] is not None:
        info["n_cpu_layers"], info["n_cpu_layers_field"] = info["blocks_cpu"], "blocks"
    if info["n_resident_layers"] is None and info["blocks_resident"] is not None:
        info["n_resident_layers"] = info["blocks_resident"]
    from_blocks = (info["blocks_streamed_bytes"] or 0) + (info["blocks_cpu_bytes"] or 0) if blocks else None
    # Shown per path: the blocks' figures when the plan lists blocks (its own placement), else its fields.
    info["show_pcie"] = info["blocks_streamed_bytes"] if blocks else info["pcie_bytes"]
    info["show_cpu"] = info["blocks_cpu_bytes"] if blocks else info["cpu_bytes"]
    sb = info["blocks_streamed_bytes"]
    if blocks and info["pcie_bytes"] is not None and abs(info["pcie_bytes"] - sb) > 0.05 * max(sb, 1):
        info["missing"].append(f"plan's {info['pcie_bytes_field']} {info['pcie_bytes'] / 1e9:.2f} GB differs from its streamed "
                               f"blocks' {sb / 1e9:.2f} GB (does it count the CPU layers' prefill streaming?)")
    if info["pcie_bytes"] is not None and info["cpu_bytes"] is not None:
        nonres, src = info["pcie_bytes"] + info["cpu_bytes"], f"plan {info['pcie_bytes_field']} + {info['cpu_bytes_field']}"
        # A CPU layer is also streamed for prefill: if pcie_bytes counts it too, the sum counts it twice.
        if from_blocks and abs(nonres - from_blocks) > 0.05 * from_blocks:
            info["missing"].append(f"plan's {info['pcie_bytes_field']} + {info['cpu_bytes_field']} = {nonres / 1e9:.2f} GB "
                                   f"differs from its blocks' {from_blocks / 1e9:.2f} GB: the blocks' figure is used")
            nonres, src = from_blocks, "plan blocks (not in VRAM, not host-mapped)"
    elif from_blocks is not None:
        nonres, src = from_blocks, "plan blocks (not in VRAM, not host-mapped)"
        info["missing"].append("plan has no " + " / ".join(
            f for f, k in (("cpu_bytes_per_token", "cpu_bytes"), ("pcie_bytes_per_token", "pcie_bytes")) if info[k] is None))
    else:
        nonres, src = info["pcie_bytes"], "plan pcie_bytes_per_token alone (no blocks, no CPU bytes)"
    info["nonresident_bytes"], info["nonresident_source"] = nonres, src
    if info["predicted_decode"] is None:
        info["missing"].append("plan has no predicted decode (" + " / ".join(FIELDS["predicted_decode"]) + ")")
    # Whatever the plan says about the CPU side, for the log (field names still settling).
    info["cpu_fields"] = {k: v for k, v in p.items() if ("cpu" in k or k.startswith("host")) and not isinstance(v, (list, dict))}
    return info


def bench_info(bj):
    """thintensor bench --json -> {tests, decode row, h2d, ...}; None when absent."""
    if not isinstance(bj, dict):
        return None
    tests = {r.get("test"): r for r in bj.get("results", []) if isinstance(r, dict)}
    tg_name = next((k for k in tests if isinstance(k, str) and k.startswith("tg")), None)
    tg = tests.get(tg_name) or {}
    stream = bj.get("stream") if isinstance(bj.get("stream"), dict) else {}
    return {"tests": tests, "tg_name": tg_name, "tg": num(tg.get("tokens_per_s")), "tg_sd": num(tg.get("sd")),
            "pp512": num((tests.get("pp512") or {}).get("tokens_per_s")),
            "pp2048": num((tests.get("pp2048") or {}).get("tokens_per_s")),
            "h2d_pinned_gbs": num(tg.get("h2d_pinned_gbs")) or num(stream.get("h2d_pinned_gbs")),
            "predicted": num(tg.get("predicted_tokens_per_s")) or num(stream.get("predicted_tokens_per_s")),
            "streamed_bytes_per_token": num(tg.get("streamed_bytes_per_token")),
            "peak_vram_bytes": num(bj.get("peak_vram_bytes")), "plan": bj.get("plan", ""),
            "backend": bj.get("backend", ""), "load_s": num(bj.get("load_s")),
            "cpu_fields": {k: v for k, v in tg.items() if ("cpu" in k or "host" in k) and num(v) is not None}}


def llama_table(rows):
    """llama-bench jsonl -> {(test, n_threads): row}."""
    out = {}
    for r in rows:
        npp, ntg = int(r.get("n_prompt") or 0), int(r.get("n_gen") or 0)
        name = f"pp{npp}" if npp and not ntg else f"tg{ntg}" if ntg and not npp else f"pp{npp}+tg{ntg}"
        out[(name, r.get("n_threads"))] = {"tokens_per_s": num(r.get("avg_ts")), "sd": num(r.get("stddev_ts")),
                                           "n_gpu_layers": r.get("n_gpu_layers"), "model_size": num(r.get("model_size")),
                                           "build_commit": r.get("build_commit"), "cpu_info": r.get("cpu_info"),
                                           "gpu_info": r.get("gpu_info")}
    return out


def llama_get(tab, test_prefix, threads):
    for (name, t), v in tab.items():
        if name.startswith(test_prefix) and (threads is None or t == threads):
            return name, v
    return None, None


# ---------------------------------------------------------------------------------------------

def fmt(v, nd=1, unit=""):
    return "-" if v is None else f"{v:,.{nd}f}{unit}"


def gib(mib):
    return "-" if mib is None else f"{mib / 1024:.2f} GiB"


def mark(ok):
    return "" if ok is None else (" ✓" if ok else " ✗")


def ratio_cell(a, b, target):
    if not a or not b:
        return "-", None
    r = a / b
    return f"×{r:.2f}{mark(r >= target)}", r


def llama_search(res, budget, vram):
    """The -ngl tries of one budget and the chosen N: the most layers whose peak stayed within the
    limit (target + 2%); if none did, the fewest tried, marked over."""
    s = next((r for r in load_tsv(os.path.join(res, "llama-search.tsv")) if r.get("budget") == budget), None)
    tries = []
    for r in load_tsv(os.path.join(res, "llama-tries.tsv")):
        if r.get("budget") != budget:
            continue
        try:
            n = int(r["n"])
        except (KeyError, ValueError):
            continue
        peak = int(r["peak_mib"]) if (r.get("peak_mib") or "").isdigit() else None
        limit = int(s["limit_mib"]) if s and (s.get("limit_mib") or "").isdigit() else None
        tries.append({"n": n, "peak_mib": peak, "rc": r.get("rc"),
                      "fits": peak is not None and limit is not None and peak <= limit})
    fit = [t for t in tries if t["fits"]]
    pick = max(fit, key=lambda t: t["n"]) if fit else (min(tries, key=lambda t: t["n"]) if tries else None)
    out = {"budget": budget, "tries": tries, "chosen": pick["n"] if pick else None, "fits": bool(pick and pick["fits"])}
    if s:
        for k in ("budget_mib", "tt_peak_mib", "target_mib", "limit_mib", "guess"):
            out[k] = int(s[k]) if (s.get(k) or "").lstrip("-").isdigit() else None
    return out


def summarize(res):
    S = {"notes": [], "rows": [], "references": {}}
    meta = load_json(os.path.join(res, "meta.json")) or {}
    cfg = load_json(os.path.join(res, "config.json"))
    vram = load_vram(res)
    doc = doctor_ceilings(res)
    S["doctor"] = doc
    commands = {r[0]: r for r in (l.rstrip("\n").split("\t") for l in open(os.path.join(res, "commands.tsv")))} \
        if os.path.exists(os.path.join(res, "commands.tsv")) else {}
    thr_all = meta.get("nproc")
    # The thread counts measured, from the file names (tt-BUDGET-tT.json), largest first.
    threads = sorted({int(f.rsplit("-t", 1)[1][:-5]) for f in os.listdir(res)
                      if f.startswith("tt-") and f.endswith(".json") and "-t" in f[3:] and f.rsplit("-t", 1)[1][:-5].isdigit()},
                     reverse=True) or ([thr_all, thr_all // 2] if thr_all else [16, 8])
    # The budgets measured, from the same names (tt-plan-BUDGET-tT.json too), largest first.
    found = {f[:-5].removeprefix("tt-plan-").removeprefix("tt-").rsplit("-t", 1)[0] for f in os.listdir(res)
             if f.startswith("tt-") and f.endswith(".json") and f[:-5].rsplit("-t", 1)[-1].isdigit()}
    found |= {r.get("budget") for r in load_tsv(os.path.join(res, "llama-search.tsv")) if r.get("budget")}
    budgets = sorted((b for b in found if budget_mib(b)), key=budget_mib, reverse=True) or BUDGETS
    # llama.cpp on the CPU alone: its decode reads every weight but the embedding table once per token.
    cpu_rows = llama_table(load_jsonl(os.path.join(res, "llama-cpu.jsonl")))
    cpu_name, cpu_row = llama_get(cpu_rows, "tg", None)
    llama_read_gbs = None
    if cpu_row and cpu_row["tokens_per_s"] and cpu_row["model_size"] and cfg:
        bpt = cpu_row["model_size"] - cfg["vocab_size"] * cfg["hidden_size"] * 2
        llama_read_gbs = bpt * cpu_row["tokens_per_s"] / 1e9
    S["references"]["llama_cpu"] = {"test": cpu_name, "tokens_per_s": cpu_row["tokens_per_s"] if cpu_row else None,
                                    "effective_read_gbs": llama_read_gbs}
    if doc["host_read_gbs"]:
        host_read, host_src = doc["host_read_gbs"], f"doctor host.read_gbs ({doc['host_source']})"
    elif llama_read_gbs:
        host_read, host_src = llama_read_gbs, "llama.cpp CPU-only decode x bytes per token (doctor has no host part)"
        S["notes"].append("the doctor record has no host part: the host read bandwidth is llama.cpp's CPU-only effective rate")
    else:
        host_read, host_src = None, None
        S["notes"].append("no host read bandwidth measured (no doctor host part, no llama.cpp CPU-only run): no combined bound")

    L = ["# Issue #16: decode layers on the CPU beside PCIe streaming, Llama-3-8B shape (random bf16 weights)", ""]
    L.append(f"- measured {meta.get('date', '?')} on {meta.get('gpu', '?')}; host {meta.get('cpu', '?')}, "
             f"{meta.get('nproc', '?')} threads; ThinTensor {meta.get('thintensor', '?')} (commit {meta.get('commit', '?')})")
    if doc["h2d_pinned_gbs"]:
        L.append(f"- GPU ceilings ({doc['source']}): h2d pinned {doc['h2d_pinned_gbs']:.1f} GB/s, device copy "
                 f"{fmt(doc['d2d_gbs'], 0)} GB/s, bf16 GEMM {fmt(doc['gemm_tflops'], 0)} TFLOP/s")
    else:
        L.append("- GPU ceilings: no doctor record (doctor.json missing or failed)")
    if doc["host"]:
        h = doc["host"]
        rates = ", ".join(f"{t} threads {g:.1f}" for t, g in doc["gemv"]) or "none"
        L.append(f"- host ceilings ({doc['host_source']}): read {fmt(doc['host_read_gbs'])} GB/s; GEMV ({h.get('gemv_dtype', '?')}, "
                 f"{h.get('isa', '?')}) GB/s: {rates}")
    else:
        L.append("- host ceilings: the doctor record has no \"host\" part")
    if cpu_row:
        L.append(f"- llama.cpp CPU only (`-ngl 0 -t {thr_all or '?'}`): {fmt(cpu_row['tokens_per_s'], 2)} tok/s {cpu_name} = "
                 f"{fmt(llama_read_gbs)} GB/s of weights read (model less its embedding table, per token)")
    res_b = bench_info(load_json(os.path.join(res, "tt-resident.json")))
    if res_b:
        L.append(f"- ThinTensor resident: {fmt(res_b['tg'])} tok/s {res_b['tg_name']}, pp512 {fmt(res_b['pp512'], 0)} tok/s, "
                 f"peak VRAM {gib(vram.get('tt-resident', {}).get('peak_mib'))}")
        S["references"]["tt_resident"] = {"tg": res_b["tg"], "pp512": res_b["pp512"], "peak_mib": vram.get("tt-resident", {}).get("peak_mib")}
    conc = os.path.join(res, "concurrency.tsv")
    if os.path.exists(conc):
        busy = [l.split("\t")[0] for l in open(conc) if "\tbuild" in l or "\tgguf" in l]
        if busy:
            L.append(f"- measured while the llama.cpp build or the GGUF conversion still ran: {', '.join(busy)}")
    L.append("")

    # ---- speed, against llama.cpp at the same peak VRAM
    L.append("## Speed at the same VRAM (ThinTensor vs llama.cpp)")
    L.append("")
    L.append("| budget | threads | ThinTensor decode tok/s | pp512 | pp2048 | peak VRAM | within budget "
             "| llama.cpp | decode tok/s | pp512 | pp2048 | decode × (≥ 1.4) | pp512 × (≥ 6) | pp2048 × (≥ 6) |")
    L.append("|---|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|")
    searches = {b: llama_search(res, b, vram) for b in budgets}
    S["llama_search"] = searches
    plans = {}
    for b in budgets:
        bm = budget_mib(b)
        s = searches[b]
        n = s["chosen"]
        ll = llama_table(load_jsonl(os.path.join(res, f"llama-ngl{n}-{b}.jsonl"))) if n is not None else {}
        ll_peak = vram.get(f"llama-ngl{n}-{b}", {}).get("peak_mib") if n is not None else None
        for t in threads:
            bi = bench_info(load_json(os.path.join(res, f"tt-{b}-t{t}.json")))
            pi = plan_info(load_json(os.path.join(res, f"tt-plan-{b}-t{t}.json")))
            plans[(b, t)] = pi
            peak = vram.get(f"tt-{b}-t{t}", {}).get("peak_mib")
            within = (peak <= bm) if peak is not None and bm else None
            _, ltg = llama_get(ll, "tg", t)
            _, lpp512 = llama_get({k: v for k, v in ll.items() if k[0] == "pp512"}, "pp512", t)
            _, lpp2048 = llama_get({k: v for k, v in ll.items() if k[0] == "pp2048"}, "pp2048", t)
            lt = ltg["tokens_per_s"] if ltg else None
            l5 = lpp512["tokens_per_s"] if lpp512 else None
            l2 = lpp2048["tokens_per_s"] if lpp2048 else None
            tg, p5, p2 = (bi or {}).get("tg"), (bi or {}).get("pp512"), (bi or {}).get("pp2048")
            rd, rdv = ratio_cell(tg, lt, TARGET_DECODE)
            r5, r5v = ratio_cell(p5, l5, TARGET_PREFILL)
            r2, r2v = ratio_cell(p2, l2, TARGET_PREFILL)
            if n is None:
                lcfg = "not measured"
            else:
                lcfg = f"`-ngl {n}` ({gib(ll_peak)}{'' if s['fits'] else ', over its limit'})"
            tt_cell = fmt(tg, 2) + (f" {bi['tg_name']}" if bi and bi["tg_name"] else "") if bi else "(bench missing)"
            within_cell = "-" if within is None else ("yes ✓" if within else f"no ✗ (+{100 * (peak - bm) / bm:.1f}%)")
            L.append(f"| {b} | {t} | {tt_cell} | {fmt(p5, 0)} | {fmt(p2, 0)} | {gib(peak)} | {within_cell} | {lcfg} "
                     f"| {fmt(lt, 2)} | {fmt(l5, 0)} | {fmt(l2, 0)} | {rd} | {r5} | {r2} |")
            S["rows"].append({"budget": b, "threads": t, "tt_decode_tok_s": tg, "tt_decode_test": (bi or {}).get("tg_name"),
                              "tt_pp512_tok_s": p5, "tt_pp2048_tok_s": p2, "tt_peak_vram_mib": peak, "within_budget": within,
                              "llama_ngl": n, "llama_fits": s["fits"], "llama_peak_vram_mib": ll_peak, "llama_decode_tok_s": lt,
                              "llama_pp512_tok_s": l5, "llama_pp2048_tok_s": l2, "decode_ratio": rdv, "pp512_ratio": r5v,
                              "pp2048_ratio": r2v, "bench_missing": bi is None,
                              "_bench": bi, "_plan": pi})
    L.append("")
    L.append("Peak VRAM is the largest `nvidia-smi memory.used` sample (every 200 ms) minus the reading just before the process "
             "started, the CUDA context included. llama.cpp runs at the most layers on the GPU (`-ngl` counts the output layer as one) "
             "whose peak stays within 2% of the larger of the budget and ThinTensor's measured peak at that budget; both thread "
             "counts ran in one llama-bench process "
             f"(`-t {','.join(str(t) for t in threads)}`: the model loads once). ✓ / ✗: the issue's target met or not.")
    L.append("")

    # ---- planner and bound
    L.append("## The planner's prediction and the combined bound (ThinTensor)")
    L.append("")
    L.append("| budget | threads | layers: resident / streamed / CPU | GB/token: PCIe / CPU | predicted tok/s | measured | error (≤ 15%) "
             "| h2d + host read GB/s | combined bound tok/s | % of bound (≥ 85%) | bound at the GEMV rate (threads) |")
    L.append("|---|---:|---|---|---:|---:|---:|---|---:|---:|---:|")
    for row in S["rows"]:
        b, t, bi, pi = row["budget"], row["threads"], row.pop("_bench"), row.pop("_plan")
        tg = row["tt_decode_tok_s"]
        pred, pred_src = (pi or {}).get("predicted_decode"), "plan"
        if pred is None and bi and bi.get("predicted"):
            pred, pred_src = bi["predicted"], "bench"
        err = abs(tg - pred) / tg if tg and pred else None
        h2d, h2d_src = (bi or {}).get("h2d_pinned_gbs"), "bench (same process)"
        if not h2d:
            h2d, h2d_src = doc["h2d_pinned_gbs"], "doctor"
        nonres = (pi or {}).get("nonresident_bytes")
        if not nonres and bi and bi.get("streamed_bytes_per_token"):
            nonres = bi["streamed_bytes_per_token"]
            S["notes"].append(f"{b} t{t}: no plan bytes: the bound counts bench's streamed bytes only (CPU layers not counted)")
        bound = (h2d + host_read) * 1e9 / nonres if nonres and h2d and host_read else None
        frac = tg / bound if tg and bound else None
        gemv_t = gemv_at(doc["gemv"], t)
        bound_gemv = (h2d + gemv_t) * 1e9 / nonres if nonres and h2d and gemv_t else None
        if pi:
            lay = f"{fmt(pi['n_resident_layers'], 0)} / {fmt(pi['blocks_streamed'], 0)} / {fmt(pi['n_cpu_layers'], 0)}"
            pcie, cpu = pi["show_pcie"], pi["show_cpu"]
            gbt = f"{fmt(pcie / 1e9 if pcie is not None else None, 2)} / {fmt(cpu / 1e9 if cpu is not None else None, 2)}"
            for m in pi["missing"]:
                S["notes"].append(f"{b} t{t}: {m}")
        else:
            lay, gbt = "(plan missing)", "-"
        bw_cell = f"{fmt(h2d)} + {fmt(host_read)}" if h2d or host_read else "-"
        L.append(f"| {b} | {t} | {lay} | {gbt} | {fmt(pred, 2)}{'' if pred_src == 'plan' or pred is None else ' (bench)'} "
                 f"| {fmt(tg, 2)} | {fmt(100 * err if err is not None else None, 1, '%')}{mark(err <= TARGET_ERROR) if err is not None else ''} "
                 f"| {bw_cell} | {fmt(bound, 2)} | {fmt(100 * frac if frac else None, 1, '%')}{mark(frac >= TARGET_BOUND) if frac else ''} "
                 f"| {fmt(bound_gemv, 2)}{f' ({t}: {gemv_t:.1f} GB/s)' if gemv_t else ''} |")
        row.update({"predicted_decode_tok_s": pred, "predicted_source": pred_src if pred is not None else None,
                    "planner_error": err, "h2d_gbs": h2d, "h2d_source": h2d_src, "host_read_gbs": host_read,
                    "host_read_source": host_src, "nonresident_bytes_per_token": nonres,
                    "nonresident_source": (pi or {}).get("nonresident_source"), "combined_bound_tok_s": bound,
                    "bound_fraction": frac, "gemv_gbs_at_threads": gemv_t, "bound_at_gemv_tok_s": bound_gemv,
                    "plan_layers": {"resident": (pi or {}).get("n_resident_layers"), "streamed": (pi or {}).get("blocks_streamed"),
                                    "cpu": (pi or {}).get("n_cpu_layers")} if pi else None,
                    "plan_vram_used": (pi or {}).get("vram_used"), "plan_cpu_fields": (pi or {}).get("cpu_fields"),
                    "bench_cpu_fields": (bi or {}).get("cpu_fields"), "bench_plan_line": (bi or {}).get("plan")})
    L.append("")
    L.append(f"The combined bound is the non-resident bytes one decode token reads (the plan's PCIe + CPU bytes per token, or its "
             f"blocks neither in VRAM nor host-mapped) over the PCIe link and the host's memory read together (h2d pinned from "
             f"bench in the same process, else the doctor; host read: {host_src or 'not measured'}): both links busy the whole "
             f"token, the resident layers' GPU time left out, so no split of the layers between the two paths decodes faster. "
             f"The last column puts the host GEMV rate at that thread count in place of the read bandwidth. Planner error: "
             f"|measured - predicted| / measured.")
    L.append("")

    # ---- goals
    def tally(key, pred):
        vals = [r[key] for r in S["rows"] if r.get(key) is not None]
        return f"{sum(1 for v in vals if pred(v))} of {len(vals)}" if vals else "none measured"
    L.append("## Against the issue's targets")
    L.append("")
    L.append(f"- decode ≥ ×{TARGET_DECODE} llama.cpp at the same VRAM: {tally('decode_ratio', lambda v: v >= TARGET_DECODE)}")
    L.append(f"- prefill ≥ ×{TARGET_PREFILL:g} llama.cpp: pp512 {tally('pp512_ratio', lambda v: v >= TARGET_PREFILL)}, "
             f"pp2048 {tally('pp2048_ratio', lambda v: v >= TARGET_PREFILL)}")
    L.append(f"- planner error ≤ {100 * TARGET_ERROR:.0f}%: {tally('planner_error', lambda v: v <= TARGET_ERROR)}")
    L.append(f"- ≥ {100 * TARGET_BOUND:.0f}% of the combined bound: {tally('bound_fraction', lambda v: v >= TARGET_BOUND)}")
    L.append(f"- peak VRAM within the budget: {tally('within_budget', lambda v: v)}")
    L.append("")

    # ---- how it was measured
    L.append("## How")
    L.append("")
    for b in budgets:
        s = searches[b]
        if s["tries"]:
            tr = ", ".join(f"-ngl {x['n']}: {gib(x['peak_mib'])}{'' if x['fits'] else ' (over)'}" for x in s["tries"])
            steps = [f"retry at -ngl {y['n']} after -ngl {x['n']} went over" if not x["fits"] else f"-ngl {y['n']} tried: room left"
                     for x, y in zip(s["tries"], s["tries"][1:])]
            retry = f" ({'; '.join(steps)})" if steps else ""
            L.append(f"- llama.cpp {b}: target {gib(s.get('target_mib'))} (the larger of the budget and ThinTensor's peak "
                     f"{gib(s.get('tt_peak_mib'))}), limit {gib(s.get('limit_mib'))}; first guess -ngl {s.get('guess')}; "
                     f"tries {tr}{retry}; chosen -ngl {s['chosen']}{'' if s['fits'] else ' (none fitted: the fewest layers tried)'}")
        else:
            L.append(f"- llama.cpp {b}: not measured")
    build = next((v.get("build_commit") for f in sorted(os.listdir(res)) if f.startswith("llama-") and f.endswith(".jsonl")
                  for v in llama_table(load_jsonl(os.path.join(res, f))).values() if v.get("build_commit")), None)
    if build:
        L.append(f"- llama.cpp build {build} (../shared/anchors, built on the machine: CUDA sm_90, GGML_NATIVE), GGUF bf16 "
                 f"from the same checkpoint by its convert_hf_to_gguf.py")
    for key in sorted(commands):
        c = commands[key]
        if len(c) >= 3:
            L.append(f"- `{key}` ({c[1]}): `{c[2]}`")
    for n in S["notes"]:
        L.append(f"- note: {n}")
    S["markdown"] = "\n".join(L) + "\n"
    return S


# ---------------------------------------------------------------------------------------------
# --show: one file's essentials, for the run's log.

def show_doctor(res):
    d = doctor_ceilings(res)
    if d["h2d_pinned_gbs"]:
        print(f"doctor ({d['source']}): h2d pinned {d['h2d_pinned_gbs']:.1f} GB/s, d2d {fmt(d['d2d_gbs'], 0)} GB/s, "
              f"gemm {fmt(d['gemm_tflops'], 0)} TFLOP/s")
    else:
        print("doctor: no GPU ceilings (doctor.json / doctor-record.json missing or without gpus[0])")
    if d["host"]:
        print(f"doctor host ({d['host_source']}): read {fmt(d['host_read_gbs'])} GB/s; gemv "
              + (", ".join(f"{t} threads {g:.1f} GB/s" for t, g in d["gemv"]) or "none"))
        print("  host:", json.dumps(d["host"]))
    else:
        print("doctor: no \"host\" part in the record or the report")


def show_plan(path):
    p = plan_info(load_json(path))
    if not p:
        print(f"plan: {path} missing or not JSON")
        return
    print(f"plan: layers resident {p['n_resident_layers']}, streamed {p['blocks_streamed']}, CPU {p['n_cpu_layers']} "
          f"({p['n_cpu_layers_field'] or 'no field'}); PCIe {fmt((p['pcie_bytes'] or 0) / 1e9, 2)} GB/token "
          f"({p['pcie_bytes_field'] or 'no field'}), CPU {fmt(p['cpu_bytes'] / 1e9 if p['cpu_bytes'] is not None else None, 2)} GB/token "
          f"({p['cpu_bytes_field'] or 'no field'}); predicted decode {fmt(p['predicted_decode'], 2)} tok/s "
          f"({p['predicted_decode_field'] or 'no field'}); VRAM {fmt((p['vram_used'] or 0) / 2**30, 2)} of "
          f"{fmt((p['vram_budget'] or 0) / 2**30, 2)} GiB")
    print("  bandwidths:", json.dumps(p["bandwidths"]))
    if p["cpu_fields"]:
        print("  cpu/host fields:", json.dumps(p["cpu_fields"]))
    for m in p["missing"] + p["warnings"]:
        print("  note:", m)


def show_bench(path):
    b = bench_info(load_json(path))
    if not b:
        print(f"bench: {path} missing or not JSON")
        return
    for name, r in b["tests"].items():
        extra = ""
        if name == b["tg_name"]:
            extra = "".join(f", {k} {r[k]:.3g}" for k in ("predicted_tokens_per_s", "pcie_bound_fraction", "h2d_pinned_gbs")
                            if num(r.get(k)) is not None)
        print(f"  {name}: {fmt(num(r.get('tokens_per_s')))} tok/s{extra}")
    if b["cpu_fields"]:
        print("  cpu/host fields:", json.dumps(b["cpu_fields"]))
    print(f"  {b['plan']} (bench's own peak VRAM {fmt((b['peak_vram_bytes'] or 0) / 2**30, 2)} GiB)")


def show_llama(path):
    rows = load_jsonl(path)
    if not rows:
        print(f"llama-bench: no rows in {path}")
    for (name, t), v in llama_table(rows).items():
        print(f"  llama.cpp -ngl {v['n_gpu_layers']} -t {t} {name}: {fmt(v['tokens_per_s'], 2)} ± {fmt(v['sd'], 2)} tok/s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="?")
    ap.add_argument("--md")
    ap.add_argument("--json")
    ap.add_argument("--show-doctor", metavar="RESULTS_DIR")
    ap.add_argument("--show-plan", metavar="FILE")
    ap.add_argument("--show-bench", metavar="FILE")
    ap.add_argument("--show-llama", metavar="FILE")
    a = ap.parse_args()
    if a.show_doctor:
        return show_doctor(a.show_doctor) or 0
    if a.show_plan:
        return show_plan(a.show_plan) or 0
    if a.show_bench:
        return show_bench(a.show_bench) or 0
    if a.show_llama:
        return show_llama(a.show_llama) or 0
    if not a.results:
        ap.error("RESULTS_DIR or one of the --show forms")
    S = summarize(a.results)
    print(S["markdown"], end="")
    if a.md:
        open(a.md, "w").write(S["markdown"])
    if a.json:
        json.dump({k: v for k, v in S.items() if k != "markdown"}, open(a.json, "w"), indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
