#!/usr/bin/env python3
"""Medians per side over the A/B runs in this directory (made by ../release-coalesce/run.sh): redlock's
(b) cycles/s, its ratios to rslock and to the redis-benchmark ceiling in the same run, (a) acquire p50
and its ratio to rslock, (c) cycles/s and its ratio to rslock, and redlock's client/server CPU per
cycle in (b).
   python3 results/2026-12-01/protocol-layer/summarize.py [DIR]"""
import glob, json, os, statistics, sys

here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rows = {}
for path in sorted(glob.glob(os.path.join(here, "[A-Z]-*.json"))):
    side = os.path.basename(path)[0]
    doc = json.load(open(path))
    runs = {(r["engine"], r["scenario"]): r for r in doc["runs"]}
    rb, sb, cb = runs[("redlock", "b")], runs[("rslock", "b")], runs[("ceiling", "b")]
    ra, sa = runs[("redlock", "a")], runs[("rslock", "a")]
    rc, sc = runs[("redlock", "c")], runs[("rslock", "c")]
    rows.setdefault(side, []).append({
        "b cycles/s": rb["cycles_per_s"],
        "b vs rslock": rb["cycles_per_s"] / sb["cycles_per_s"],
        "b vs ceiling": rb["cycles_per_s"] / cb["cycles_per_s"],
        "a p50 us": ra["acquire_us"]["p50"],
        "a p50 vs rslock": ra["acquire_us"]["p50"] / sa["acquire_us"]["p50"],
        "c cycles/s": rc["cycles_per_s"],
        "c vs rslock": rc["cycles_per_s"] / sc["cycles_per_s"],
        "b client cpu us": rb["client_cpu_us_per_cycle"],
        "b server cpu us": rb["server_cpu_us_per_cycle"],
        "b rslock client cpu us": sb["client_cpu_us_per_cycle"],
        "load": doc["machine"]["loadavg_start"],
    })
keys = list(next(iter(rows.values()))[0].keys())
print("| side | runs | " + " | ".join(keys) + " |")
print("|---|---:|" + "---:|" * len(keys))
for side in sorted(rows):
    med = [statistics.median(r[k] for r in rows[side]) for k in keys]
    print(f"| {side} | {len(rows[side])} | " + " | ".join(f"{m:,.2f}" for m in med) + " |")
