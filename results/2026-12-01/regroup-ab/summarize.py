#!/usr/bin/env python3
"""Medians of the standard scenarios over base-N.json / new-N.json: (a) acquire p50, (b) and (c) cycles/s,
per engine, and the median of the same-run redlock/rslock ratios. Usage: summarize.py DIR"""
import json, statistics, sys
from pathlib import Path

d = Path(sys.argv[1])
metric = {"a": ("acquire p50 µs", lambda r: r["acquire_us"]["p50"]),
          "b": ("cycles/s", lambda r: r["cycles_per_s"]),
          "c": ("cycles/s", lambda r: r["cycles_per_s"])}
print("| scenario | metric | side | redlock (median) | rslock (median) | redlock/rslock (median of same-run ratios; per run) | load avg (start of each run) |")
print("|---|---|---|--:|--:|--:|---|")
for sc, (name, get) in metric.items():
    for side in ("base", "new"):
        files = sorted(d.glob(f"{side}-*.json"))
        red, rs, ratios, loads = [], [], [], []
        for f in files:
            j = json.loads(f.read_text())
            runs = {r["engine"]: r for r in j["runs"] if r["scenario"] == sc}
            a, b = get(runs["redlock"]), get(runs["rslock"])
            red.append(a); rs.append(b); ratios.append(a / b)
            loads.append(j["machine"]["loadavg_start"])
        fmt = (lambda v: f"{v:,.0f}")
        print(f"| ({sc}) | {name} | {side} | {fmt(statistics.median(red))} | {fmt(statistics.median(rs))} | "
              f"{statistics.median(ratios):.2f}x ({', '.join(f'{x:.2f}' for x in ratios)}) | "
              f"{', '.join(f'{x:.1f}' for x in loads)} |")
