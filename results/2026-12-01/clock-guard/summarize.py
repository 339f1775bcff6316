#!/usr/bin/env python3
"""Medians per side (guard on / off) of (a) acquire p50, (b) and (c) cycles/s for redlock, and the same-run
redlock/rslock ratios.   python3 results/2026-12-01/clock-guard/summarize.py"""
import glob, json, os, statistics as st
here = os.path.dirname(os.path.abspath(__file__))
def get(doc, eng, sc, key):
    for x in doc["runs"]:
        if x["engine"] == eng and x["scenario"] == sc:
            v = x[key]
            return v["p50"] if isinstance(v, dict) else v
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
