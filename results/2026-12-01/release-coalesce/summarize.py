#!/usr/bin/env python3
"""Medians per side over the A/B/C runs in this directory (see run.sh): redlock's (b) cycles/s, its
ratios to rslock and to the redis-benchmark ceiling in the same run, (a) acquire p50 and its ratio to
rslock, and redlock's client/server CPU per cycle in (b).
   python3 results/2026-12-01/release-coalesce/summarize.py [DIR]"""
import os, sys

# The shared summary code lives in results/lib/summary.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../lib"))
import summary

rows = summary.side_rows(summary.run_dir(__file__), "[A-Z]-*.json", [
    "b cycles/s", "b vs rslock", "b vs ceiling", "a p50 us", "a p50 vs rslock",
    "b client cpu us", "b server cpu us", "b rslock client cpu us", "load"])
summary.print_side_medians(rows)
