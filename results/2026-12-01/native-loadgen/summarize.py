#!/usr/bin/env python3
"""Medians per side (N native, S forced scripts) over the runs here (see run.sh): redlock's (b)
cycles/s, its ratio to the redis-benchmark ceiling of the same run, its server and client CPU per
cycle, (a) p50 and (c) cycles/s.
   python3 results/2026-12-01/native-loadgen/summarize.py [DIR]"""
import glob, json, os, statistics, sys

here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rows = {}
for path in sorted(glob.glob(os.path.join(here, "[NS]-*.json"))):
    side = os.path.basename(path)[0]
    doc = json.load(open(path))
    runs = {(r["engine"], r["scenario"]): r for r in doc["runs"]}
    rb, cb = runs[("redlock", "b")], runs[("ceiling", "b")]
    rows.setdefault(side, []).append({
        "b cycles/s": rb["cycles_per_s"],
        "b vs ceiling": rb["cycles_per_s"] / cb["cycles_per_s"],
        "b server cpu us": rb["server_cpu_us_per_cycle"],
        "b client cpu us": rb["client_cpu_us_per_cycle"],
        "a p50 us": runs[("redlock", "a")]["acquire_us"]["p50"],
        "c cycles/s": runs[("redlock", "c")]["cycles_per_s"],
        "load": doc["machine"]["loadavg_start"],
    })
keys = list(next(iter(rows.values()))[0].keys())
print("| side | runs | " + " | ".join(keys) + " |")
print("|---|---:|" + "---:|" * len(keys))
for side in sorted(rows):
    med = {k: statistics.median(r[k] for r in rows[side]) for k in keys}
    print(f"| {side} | {len(rows[side])} | " + " | ".join(f"{med[k]:,.2f}" for k in keys) + " |")
if "N" in rows and "S" in rows:
    n = statistics.median(r["b server cpu us"] for r in rows["N"])
    s = statistics.median(r["b server cpu us"] for r in rows["S"])
    print(f"\n(b) server CPU per cycle, native / scripts: {n / s:.2f}")
