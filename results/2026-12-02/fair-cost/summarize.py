#!/usr/bin/env python3
"""Medians of run.sh's A/B runs, same-run fair/plain ratios, and the servers' commandstats per cycle:
python3 summarize.py DIR"""
import glob, json, os, re, statistics, sys
from collections import defaultdict

d = sys.argv[1]
runs = defaultdict(dict)  # (lock, procs, build) -> {round: run}
for f in glob.glob(os.path.join(d, "*-*-*-[0-9]*.json")):
    lock, procs, build, rnd = os.path.basename(f)[:-5].split("-")
    runs[(lock, int(procs), build)][int(rnd)] = json.load(open(f))["runs"][0]

def med(rs, key):
    return statistics.median(key(r) for r in rs)

print("| lock | layout (processes x workers) | build | n | cycles/s | p99 ms | p99.9 ms | server µs/cycle | client µs/cycle | att/acq | overtakes max (each run) / mean |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for key in sorted(runs, key=lambda k: (k[0] != "fair", k[1], k[2] != "after")):
    rs = [runs[key][i] for i in sorted(runs[key])]
    lock, procs, build = key
    print(f"| {lock} | {procs} x {64 // procs} | {build} | {len(rs)} | {med(rs, lambda r: r['cycles_per_s']):,.0f} "
          f"| {med(rs, lambda r: r['acquire_us']['p99']) / 1000:.1f} | {med(rs, lambda r: r['acquire_us']['p999']) / 1000:.1f} "
          f"| {med(rs, lambda r: r['server_cpu_us_per_cycle']):.1f} | {med(rs, lambda r: r['client_cpu_us_per_cycle']):.1f} "
          f"| {med(rs, lambda r: r['attempts_per_acquire']):.2f} "
          f"| {max(r['max_overtakes'] for r in rs)} ({'/'.join(str(r['max_overtakes']) for r in rs)}) / {med(rs, lambda r: r['overtakes_per_grant']):.2f} |")

print()
print("Same-run ratios (each round's fair run against that round's plain run), medians:")
print()
print("| layout | build | fair/plain cycles/s | fair/plain server µs/cycle |")
print("|---|---|---|---|")
for procs in (4, 16):
    for build in ("after", "before"):
        f, x = runs.get(("fair", procs, build), {}), runs.get(("exclusive", procs, build), {})
        both = sorted(set(f) & set(x))
        if not both:
            continue
        rate = statistics.median(f[i]["cycles_per_s"] / x[i]["cycles_per_s"] for i in both)
        cpu = statistics.median(f[i]["server_cpu_us_per_cycle"] / x[i]["server_cpu_us_per_cycle"] for i in both)
        print(f"| {procs} x {64 // procs} | {build} | {rate:.2f}x | {cpu:.1f}x |")

print()
print("Commandstats, summed over the 5 nodes, per measured cycle (one run each, --warmup 0s):")
print()
print("| lock | layout | build | cycles | script calls/cycle | publishes/cycle | evalsha µs/call (inner commands included) |")
print("|---|---|---|---|---|---|---|")
for f in sorted(glob.glob(os.path.join(d, "stats-*.commandstats"))):
    _, lock, procs, build = os.path.basename(f)[: -len(".commandstats")].split("-")
    cycles = json.load(open(f[: -len(".commandstats")] + ".json"))["runs"][0]["cycles"]
    calls, usec = defaultdict(int), defaultdict(int)
    for line in open(f):
        m = re.match(r"\d+ cmdstat_([^:]+):calls=(\d+),usec=(\d+)", line)
        if m:
            calls[m.group(1)] += int(m.group(2))
            usec[m.group(1)] += int(m.group(3))
    ev = calls["evalsha"] + calls["eval"]
    print(f"| {lock} | {procs} x {64 // int(procs)} | {build} | {cycles:,} | {ev / cycles:.1f} "
          f"| {calls['publish'] / cycles:.1f} | {usec['evalsha'] / max(ev, 1):.1f} |")
