#!/usr/bin/env python3
"""Summarize an Nsight Compute CSV of decode steps (bench/profile_decode.sh): per kernel and grid
size, the launches, total and average time, DRAM throughput, occupancy and registers.

A launch that takes more than 4x the median of its kernel and grid is listed on its own line
("long"): the output head shares its GEMV kernel with q/k/v, and its ~20x longer launches would
otherwise hide q/k/v's average. usage: ncu_summary.py CSV"""
import collections
import csv
import statistics
import sys


def launches(path):
    rows = list(csv.reader(open(path)))
    for i, r in enumerate(rows):
        if "Kernel Name" in r:
            hdr, body = r, rows[i + 2:]
            break
    else:
        return None
    ix = {k: hdr.index(k) for k in hdr}
    num = lambda r, k: float(r[ix[k]].replace(",", ""))
    out = []
    for r in body:
        if len(r) < len(hdr):
            continue
        name = r[ix["Kernel Name"]].split("(")[0][:48] + " g" + r[ix["launch__grid_size"]].replace(",", "")
        out.append((name, num(r, "gpu__time_duration.sum"), num(r, "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
                    num(r, "sm__warps_active.avg.pct_of_peak_sustained_active"), num(r, "launch__registers_per_thread")))
    return out


def main(path):
    ls = launches(path)
    if not ls:
        print("no ncu data")
        return
    med = {n: statistics.median(t for m, t, *_ in ls if m == n) for n in {l[0] for l in ls}}
    agg = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0.0])
    for name, t, dram, occ, regs in ls:
        a = agg[name + (" long" if t > 4 * med[name] else "")]
        a[0] += 1
        a[1] += t
        a[2] += dram
        a[3] += occ
        a[4] = regs
    tot = sum(a[1] for a in agg.values())
    print(f"{'kernel':<60} {'n':>4} {'total us':>10} {'share':>6} {'avg us':>8} {'dram%':>6} {'occ%':>6} {'regs':>5}")
    for name, a in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        print(f"{name:<60} {a[0]:>4} {a[1]/1e3:>10.1f} {100*a[1]/tot:>5.1f}% {a[1]/a[0]/1e3:>8.2f} {a[2]/a[0]:>6.1f} "
              f"{a[3]/a[0]:>6.1f} {a[4]:>5.0f}")


if __name__ == "__main__":
    main(sys.argv[1])
