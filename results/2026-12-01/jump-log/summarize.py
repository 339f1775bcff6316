#!/usr/bin/env python3
"""Medians over the A/B runs in this directory: redlock's (b) cycles/s and its ratio to rslock in the
same run, (a) acquire p50, and redlock's client/server CPU per cycle in (b).
   python3 results/2026-12-01/jump-log/summarize.py"""
import os, sys

# The shared summary code lives in results/lib/summary.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../lib"))
import summary

here = os.path.dirname(os.path.abspath(__file__))
rows = summary.side_rows(here, "[AB]-*.json", [
    "b cycles/s", "b vs rslock", "a p50 us", "a p50 vs rslock",
    "b client cpu us", "b server cpu us", "b rslock client cpu us"])
summary.print_side_medians(rows)
