#!/usr/bin/env python3
"""Summarizes run.sh's rounds of the standard scenarios: per scenario, each round's cycles/s, client and
server CPU per cycle and acquire p50 for both builds, the pairwise after/before ratios of the same round
and their median. Run from anywhere: python3 summarize.py [DIR] (DIR: the runs' directory, default this
one)."""
import glob, json, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../lib"))
import summary

here = summary.run_dir(__file__)
rounds = sorted({int(p.rsplit("-", 1)[1].split(".")[0]) for p in glob.glob(f"{here}/std-*-*.json")})
fields = [
    ("cycles/s", lambda r: r["cycles_per_s"], "{:,.0f}"),
    ("client µs/cycle", lambda r: r["client_cpu_us_per_cycle"], "{:.1f}"),
    ("server µs/cycle", lambda r: r["server_cpu_us_per_cycle"], "{:.1f}"),
    ("acquire p50 µs", lambda r: r["acquire_us"]["p50"], "{:.0f}"),
]
runs = {}
for build in ("before", "after"):
    for r in rounds:
        for run in json.load(open(f"{here}/std-{build}-{r}.json"))["runs"]:
            runs.setdefault(run["scenario"], {}).setdefault(build, []).append(run)
print(f"Standard scenarios, {len(rounds)} alternating rounds (before | after | after/before per round, median):")
for scenario, b in sorted(runs.items()):
    print(f"  {scenario}")
    for name, get, f in fields:
        bb, aa = [get(r) for r in b["before"]], [get(r) for r in b["after"]]
        pair = [a / o for a, o in zip(aa, bb) if o]
        print(f"    {name}: {', '.join(f.format(x) for x in bb)} | {', '.join(f.format(x) for x in aa)}"
              f" | {', '.join(f'{p:.2f}' for p in pair)} (median {summary.median(pair):.2f}x)")
