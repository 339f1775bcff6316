#!/usr/bin/env python3
"""Medians over the rounds of run.sh: the contention rows (before/after) and the standard scenarios.
   python3 results/2026-12-03/fair-successor/summarize.py [DIR]"""
import os, sys

# The shared summary code lives in results/lib/summary.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../lib"))
import summary

summary.print_contention_and_standard(summary.run_dir(__file__))
