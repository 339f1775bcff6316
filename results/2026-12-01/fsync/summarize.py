#!/usr/bin/env python3
"""Medians over the runs in this directory, per persistence mode: (a) acquire p50, (b) and (c) cycles/s per
engine, and same-run ratios (redlock/rslock, redlock/ceiling, and each mode's (b) against `none` of the same
round).   python3 results/2026-12-01/fsync/summarize.py > results/2026-12-01/fsync/table.md"""
import glob, json, os, statistics as st, sys

# get(doc, engine, scenario, key) is shared: results/lib/summary.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../lib"))
from summary import get
here = os.path.dirname(os.path.abspath(__file__))
runs = {}
for path in sorted(glob.glob(os.path.join(here, "*-[0-9].json"))):
    mode, r = os.path.basename(path)[:-5].rsplit("-", 1)
    runs.setdefault(mode, {})[int(r)] = json.load(open(path))
med = lambda xs: st.median(xs) if xs else float("nan")
print("| persistence | runs | load | (a) redlock p50 µs | (a) p50 redlock/rslock | (b) redlock cycles/s | (b) rslock | (b) ceiling | (b) redlock/rslock | (b) redlock/ceiling | (b) redlock ÷ same round's `none` | (c) redlock cycles/s | (c) rslock |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for mode in ("none", "everysec", "always"):
    docs = runs.get(mode, {})
    if not docs:
        continue
    col = lambda e, s, k: [get(d, e, s, k) for d in docs.values()]
    ratio = lambda e1, e2, s, k: [get(d, e1, s, k) / get(d, e2, s, k) for d in docs.values()]
    vs_none = [get(d, "redlock", "b", "cycles_per_s") / get(runs["none"][r], "redlock", "b", "cycles_per_s")
               for r, d in docs.items() if r in runs.get("none", {})]
    loads = ", ".join(f'{d["machine"]["loadavg_start"]:.1f}' for d in docs.values())
    print(f"| {mode} | {len(docs)} | {loads} | {med(col('redlock','a','acquire_us')):.0f} | "
          f"{med(ratio('redlock','rslock','a','acquire_us')):.2f}x | {med(col('redlock','b','cycles_per_s')):,.0f} | "
          f"{med(col('rslock','b','cycles_per_s')):,.0f} | {med(col('ceiling','b','cycles_per_s')):,.0f} | "
          f"{med(ratio('redlock','rslock','b','cycles_per_s')):.2f}x | {med(ratio('redlock','ceiling','b','cycles_per_s')):.2f}x | "
          f"{med(vs_none):.2f}x | {med(col('redlock','c','cycles_per_s')):,.0f} | {med(col('rslock','c','cycles_per_s')):,.0f} |")
