#!/usr/bin/env python3
"""Medians per side (guard on / off) of (a) acquire p50, (b) and (c) cycles/s for redlock, and the same-run
redlock/rslock ratios.   python3 results/2026-12-01/clock-guard/summarize.py"""
import glob, json, os, statistics as st, sys

# get(doc, engine, scenario, key) is shared: results/lib/summary.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../lib"))
from summary import get
here = os.path.dirname(os.path.abspath(__file__))
print("| guard | runs | load | (a) p50 µs | (a) p50 ÷ rslock | (b) cycles/s | (b) ÷ rslock | (c) cycles/s | (c) ÷ rslock |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
for side in ("on", "off"):
    docs = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(here, f"{side}-*.json")))]
    m = lambda f: st.median([f(d) for d in docs])
    r = lambda sc, k: m(lambda d: get(d, "redlock", sc, k) / get(d, "rslock", sc, k))
    loads = ", ".join(f'{d["machine"]["loadavg_start"]:.1f}' for d in docs)
    print(f"| {side} | {len(docs)} | {loads} | {m(lambda d: get(d,'redlock','a','acquire_us')):.0f} | {r('a','acquire_us'):.2f}x | "
          f"{m(lambda d: get(d,'redlock','b','cycles_per_s')):,.0f} | {r('b','cycles_per_s'):.2f}x | "
          f"{m(lambda d: get(d,'redlock','c','cycles_per_s')):,.0f} | {r('c','cycles_per_s'):.2f}x |")
