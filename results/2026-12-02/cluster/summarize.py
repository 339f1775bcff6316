#!/usr/bin/env python3
"""Medians over run.sh's pairs: per scenario, redlock and redlock-fred on three 3-master clusters (C)
and redlock on three standalone masters (S), with the same-pair ratios the issue asks for.
   python3 results/2026-12-02/cluster/summarize.py [DIR]"""
import glob, json, os, statistics, sys

here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
med = statistics.median
pairs = []
for c in sorted(glob.glob(os.path.join(here, "C-*.json"))):
    s = c.replace("C-", "S-")
    if not os.path.exists(s):
        continue
    dc, ds = json.load(open(c)), json.load(open(s))
    runs = {(r["engine"], r["scenario"], "C"): r for r in dc["runs"]}
    runs.update({(r["engine"], r["scenario"], "S"): r for r in ds["runs"]})
    pairs.append((runs, dc["machine"]["loadavg_start"], ds["machine"]["loadavg_start"]))
print(f"pairs: {len(pairs)}, load at start (C, S): {', '.join(f'{a}/{b}' for _, a, b in pairs)}\n")
print("| scenario | cluster redlock cycles/s | cluster fred cycles/s | standalone cycles/s | new / fred | cluster / standalone | client µs/cycle cluster / standalone | acquire p50 µs cluster / fred / standalone |")
print("|---|---:|---:|---:|---:|---:|---:|---|")
for sc in "abc":
    rows = []
    for runs, _, _ in pairs:
        n, f, s = runs[("redlock", sc, "C")], runs[("redlock-fred", sc, "C")], runs[("redlock", sc, "S")]
        rows.append((n["cycles_per_s"], f["cycles_per_s"], s["cycles_per_s"],
                     n["cycles_per_s"] / f["cycles_per_s"], n["cycles_per_s"] / s["cycles_per_s"],
                     n["client_cpu_us_per_cycle"] / s["client_cpu_us_per_cycle"],
                     n["acquire_us"]["p50"], f["acquire_us"]["p50"], s["acquire_us"]["p50"]))
    m = [med([r[i] for r in rows]) for i in range(9)]
    print(f"| {sc} | {m[0]:,.0f} | {m[1]:,.0f} | {m[2]:,.0f} | {m[3]:.2f} | {m[4]:.2f} | {m[5]:.2f} | {m[6]:.0f} / {m[7]:.0f} / {m[8]:.0f} ({m[6] / m[8]:.2f}x) |")
