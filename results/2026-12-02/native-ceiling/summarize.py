#!/usr/bin/env python3
"""Medians over the runs in this directory (made by run.sh): redlock's cycles/s per scenario and waiting
mode, its same-run ratios to the naive ceiling (SET NX PX + EVALSHA) and the native one (SET NX PX +
DELIFEQ), and its server and client CPU per cycle.
   python3 results/2026-12-02/native-ceiling/summarize.py [DIR]"""
import glob, json, os, statistics, sys

here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rows, ceil, loads = {}, [], []
for path in sorted(glob.glob(os.path.join(here, "*-[0-9].json"))):
    doc = json.load(open(path))
    loads.append(doc["machine"]["loadavg_start"])
    ce = {r["scenario"]: r for r in doc["runs"] if r["engine"] == "ceiling"}
    ceil.append((ce["b"]["cycles_per_s"], ce["b"]["native_cycles_per_s"]))
    for r in doc["runs"]:
        if r["engine"] != "redlock":
            continue
        c = ce[r["scenario"]]
        rows.setdefault((r["scenario"], r["label"]), []).append((
            r["cycles_per_s"], r["cycles_per_s"] / c["cycles_per_s"],
            r["cycles_per_s"] / c["native_cycles_per_s"],
            r["server_cpu_us_per_cycle"], r["client_cpu_us_per_cycle"]))
med = lambda xs: statistics.median(xs)
print(f"runs: {len(loads)}, load at start: {', '.join(map(str, loads))}")
print(f"ceiling cycles/s, naive / native (median): {med([c[0] for c in ceil]):,.0f} / {med([c[1] for c in ceil]):,.0f}"
      f" (native / naive {med([c[1] / c[0] for c in ceil]):.2f})\n")
print("| scenario | engine | cycles/s | vs naive ceiling | vs native ceiling | server CPU µs/cycle | client CPU µs/cycle |")
print("|---|---|---:|---:|---:|---:|---:|")
for (scenario, label), rs in sorted(rows.items()):
    m = [med([r[i] for r in rs]) for i in range(5)]
    print(f"| {scenario} | {label} | {m[0]:,.0f} | {m[1]:.2f} | {m[2]:.2f} | {m[3]:.1f} | {m[4]:.1f} |")
