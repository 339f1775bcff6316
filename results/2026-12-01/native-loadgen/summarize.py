#!/usr/bin/env python3
"""Medians per side (N native, S forced scripts) over the runs here (see run.sh): redlock's (b)
cycles/s, its ratio to the redis-benchmark ceiling of the same run, its server and client CPU per
cycle, (a) p50 and (c) cycles/s; then native's server CPU per cycle over the scripts'.
   python3 results/2026-12-01/native-loadgen/summarize.py [DIR]"""
import os, sys

# The shared summary code lives in results/lib/summary.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../lib"))
import summary

rows = summary.side_rows(summary.run_dir(__file__), "[NS]-*.json", [
    "b cycles/s", "b vs ceiling", "b server cpu us", "b client cpu us", "a p50 us", "c cycles/s", "load"])
summary.print_side_medians(rows)
if "N" in rows and "S" in rows:
    n = summary.median(r["b server cpu us"] for r in rows["N"])
    s = summary.median(r["b server cpu us"] for r in rows["S"])
    print(f"\n(b) server CPU per cycle, native / scripts: {n / s:.2f}")
