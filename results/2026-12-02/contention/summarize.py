#!/usr/bin/env python3
"""Medians over the rounds of run.sh, per layout, build and engine: cycles/s, acquire p99 and p99.9,
fairness (workers, and processes), overtakes (max / per grant), server CPU per cycle; and the
same-run ratios (after/before, cross-process/one-process)."""
import glob, json, os, statistics, sys

here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rows = {}
for path in sorted(glob.glob(os.path.join(here, "*.json"))):
    layout, build, _ = os.path.basename(path)[:-5].split("-")
    for run in json.load(open(path))["runs"]:
        key = (layout, run["scenario"], run["label"], build)
        rows.setdefault(key, []).append(run)

def med(runs, f):
    vals = [f(r) for r in runs if f(r) is not None]
    return statistics.median(vals) if vals else None

print("| layout | scenario | engine | build | n | cycles/s | p99 ms | p99.9 ms | fairness | proc fairness | overtakes max/mean | server µs/cycle |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for (layout, sc, label, build), runs in sorted(rows.items()):
    g = lambda f: med(runs, f)
    fmt = lambda v, p=0: "-" if v is None else f"{v:,.{p}f}"
    print(f"| {layout} | {sc} | {label} | {build} | {len(runs)} | {fmt(g(lambda r: r['cycles_per_s']))} "
          f"| {fmt(g(lambda r: r['acquire_us']['p99'] / 1000), 2)} | {fmt(g(lambda r: r['acquire_us']['p999'] / 1000), 2)} "
          f"| {fmt(g(lambda r: r.get('fairness')), 3)} | {fmt(g(lambda r: r.get('process_fairness')), 3)} "
          f"| {fmt(g(lambda r: r.get('max_overtakes')))}/{fmt(g(lambda r: r.get('overtakes_per_grant')), 2)} "
          f"| {fmt(g(lambda r: r.get('server_cpu_us_per_cycle')), 1)} |")

# Same-run ratios: redlock over rslock in each loadgen run (both engines ran in it, one after the
# other, on the same nodes), and each round's cross-process rate over its one-process (c) rate
# (adjacent runs of the same build). Medians of the rounds, each round's value in brackets.
def per_round(layout, build):
    out = {}
    for path in sorted(glob.glob(os.path.join(here, f"{layout}-{build}-*.json"))):
        r = path[:-5].rsplit("-", 1)[1]
        out[r] = {run["label"]: run for run in json.load(open(path))["runs"]}
    return out

print()
print("| layout | build | redlock/rslock cycles/s | redlock/rslock p99.9 | redlock cross/one-process cycles/s |")
print("|---|---|---|---|---|")
for layout in ["c1p", "c4p", "c16p"]:
    for build in ["before", "after", "handoff"]:
        rounds = per_round(layout, build)
        one = per_round("c1p", build)
        rate = [v["redlock"]["cycles_per_s"] / v["rslock"]["cycles_per_s"] for v in rounds.values()]
        tail = [v["redlock"]["acquire_us"]["p999"] / v["rslock"]["acquire_us"]["p999"] for v in rounds.values()]
        cross = [v["redlock"]["cycles_per_s"] / one[r]["redlock"]["cycles_per_s"] for r, v in rounds.items() if r in one]
        show = lambda xs: f"{statistics.median(xs):.2f}x ({', '.join(f'{x:.2f}' for x in xs)})"
        print(f"| {layout} | {build} | {show(rate)} | {show(tail)} | {show(cross)} |")
