#!/usr/bin/env python3
"""Summarizes run.sh's rounds: the contention rows (per layout, lock and engine: each round's value
for both builds, before -> after, and the medians' ratio for cycles/s) and the standard scenarios
(cycles/s per round, pairwise after/before ratios and their median). Run from anywhere:
python3 summarize.py [DIR] (DIR: the runs' directory, default this one; `final` for the final build's)"""
import glob, json, os, statistics, sys

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), *sys.argv[1:2])
med = statistics.median


def rounds(prefix):
    return sorted({int(p.rsplit("-", 1)[1].split(".")[0]) for p in glob.glob(f"{here}/{prefix}-*-*.json")})


def fmt(xs, f):
    return ", ".join(f.format(x) for x in xs)


rows = {}
for build in ("before", "after"):
    for r in rounds("cont"):
        for row in json.load(open(f"{here}/cont-{build}-{r}.json"))["contention"]["rows"]:
            rows.setdefault((row["layout"], row["lock"], row["engine"]), {}).setdefault(build, []).append(row)
fields = [
    ("cycles/s", lambda r: r["cycles_per_s"], "{:,.0f}"),
    ("p99.9 ms", lambda r: r["acquire_us"]["p999"] / 1000, "{:.1f}"),
    ("server µs/grant", lambda r: r["server_cpu_us_per_cycle"], "{:.1f}"),
    ("client µs/grant", lambda r: r["client_cpu_us_per_cycle"], "{:.1f}"),
    ("node cmds/grant", lambda r: r["node_commands_per_grant"], "{:.2f}"),
    ("max overtakes", lambda r: r["max_overtakes"], "{}"),
]
print("Contention, 64 workers on 4 keys, hold 0 (each round's value, before -> after; medians' ratio):")
for key in sorted(rows, key=lambda k: ({"1x64": 0, "4x16": 1, "16x4": 2}[k[0]], k[1], k[2])):
    b = rows[key]
    parts = []
    for name, get, f in fields:
        bb, aa = [get(r) for r in b["before"]], [get(r) for r in b["after"]]
        ratio = med(aa) / med(bb) if med(bb) else float("nan")
        parts.append(f"{name} {fmt(bb, f)} -> {fmt(aa, f)} ({ratio:.2f}x)")
    print(f"  {' '.join(key)}: " + "; ".join(parts))
# Same-run ratios: redlock / rslock per layout, per round and build.
print("redlock / rslock cycles/s, same run (per round):")
for layout in ("1x64", "4x16", "16x4"):
    for build in ("before", "after"):
        red = [r["cycles_per_s"] for r in rows[(layout, "exclusive", "redlock")][build]]
        rs = [r["cycles_per_s"] for r in rows[(layout, "exclusive", "rslock")][build]]
        ratios = [a / b for a, b in zip(red, rs)]
        print(f"  {layout} {build}: {fmt(ratios, '{:.2f}x')} (median {med(ratios):.2f}x)")
print("Standard scenarios, cycles/s (before | after | pairwise after/before, median):")
std = {}
for build in ("before", "after"):
    for r in rounds("std"):
        for run in json.load(open(f"{here}/std-{build}-{r}.json"))["runs"]:
            std.setdefault(run["scenario"], {}).setdefault(build, []).append(run["cycles_per_s"])
for sc, b in sorted(std.items()):
    pair = [a / o for a, o in zip(b["after"], b["before"])]
    print(f"  {sc}: {fmt(b['before'], '{:,.0f}')} | {fmt(b['after'], '{:,.0f}')} | "
          f"{fmt(pair, '{:.2f}')} (median {med(pair):.2f}x)")
