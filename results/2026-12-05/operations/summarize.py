#!/usr/bin/env python3
"""Summarizes run.sh's rounds: per scenario, each round's cycles/s for both builds, the pairwise
after/before ratios (a round's two runs are neighbours in time) and their median, and the medians'
ratio. Also the client and server CPU per cycle, medians. Run from anywhere: python3 summarize.py"""
import glob, json, os, statistics

here = os.path.dirname(os.path.abspath(__file__))
rounds = sorted({int(p.rsplit("-", 1)[1].split(".")[0]) for p in glob.glob(f"{here}/std-*-*.json")})
rows = {}
for build in ("before", "after"):
    for r in rounds:
        for run in json.load(open(f"{here}/std-{build}-{r}.json"))["runs"]:
            rows.setdefault(run["scenario"], {}).setdefault(build, []).append(run)
for sc, b in sorted(rows.items()):
    cps = {k: [run["cycles_per_s"] for run in v] for k, v in b.items()}
    pair = [a / o for a, o in zip(cps["after"], cps["before"])]
    cpu = lambda k, f: statistics.median(run[f] for run in b[k])
    print(f"{sc}: before {', '.join(f'{x:,.0f}' for x in cps['before'])} | after "
          f"{', '.join(f'{x:,.0f}' for x in cps['after'])} | pairwise after/before median "
          f"{statistics.median(pair):.2f}x (min {min(pair):.2f}, max {max(pair):.2f}), medians "
          f"{statistics.median(cps['after']) / statistics.median(cps['before']):.2f}x | client CPU/cycle "
          f"{cpu('before', 'client_cpu_us_per_cycle'):.1f} -> {cpu('after', 'client_cpu_us_per_cycle'):.1f} us, "
          f"server {cpu('before', 'server_cpu_us_per_cycle'):.1f} -> {cpu('after', 'server_cpu_us_per_cycle'):.1f} us")
