#!/usr/bin/env python3
"""Medians over the rounds of run.sh: the contention rows (before/after) and the standard scenarios."""
import glob, json, os, statistics, sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
med = statistics.median


def rows(build):
    out = {}
    for f in sorted(glob.glob(f"{d}/contention-{build}-*.json")):
        for r in json.load(open(f))["contention"]["rows"]:
            key = (r["layout"], r["lock"], r["engine"])
            out.setdefault(key, []).append(r)
    return out


def std(build):
    out = {}
    for f in sorted(glob.glob(f"{d}/std-{build}-*.json")):
        for r in json.load(open(f))["runs"]:
            out.setdefault(r["scenario"], []).append(r)
    return out


b, a = rows("before"), rows("after")
n = len(glob.glob(f"{d}/contention-after-*.json"))
print(f"contention, medians of {n} rounds (before -> after)\n")
print("| layout | lock | engine | cycles/s | p99 ms | p99.9 ms | procs fairness | overtakes max/mean | server µs/cycle |")
print("|---|---|---|---:|---:|---:|---:|---|---:|")
for key in a:
    if key not in b:
        continue
    def m(rs, f):
        return med([f(r) for r in rs])
    cyc = lambda r: r["cycles_per_s"]
    p99 = lambda r: r["acquire_us"]["p99"] / 1000
    p999 = lambda r: r["acquire_us"]["p999"] / 1000
    pf = lambda r: r["process_fairness"] or 1.0
    ov = lambda r: r["max_overtakes"]
    ovm = lambda r: r["overtakes_per_grant"]
    srv = lambda r: r["server_cpu_us_per_cycle"]
    B, A = b[key], a[key]
    print(f"| {key[0]} | {key[1]} | {key[2]} | {m(B,cyc):,.0f} → **{m(A,cyc):,.0f}** | {m(B,p99):.1f} → {m(A,p99):.1f} "
          f"| {m(B,p999):.1f} → **{m(A,p999):.1f}** | {m(B,pf):.3f} → {m(A,pf):.3f} | {m(B,ov):.0f}/{m(B,ovm):.2f} → {m(A,ov):.0f}/{m(A,ovm):.2f} "
          f"| {m(B,srv):.0f} → {m(A,srv):.0f} |")

print("\ngoals (issue 29), after, per round:\n")
for f in sorted(glob.glob(f"{d}/contention-after-*.json")):
    g = json.load(open(f))["contention"]["goals"]
    print(os.path.basename(f) + ": " + "; ".join(
        f"({x['scenario']}) {x['what']} {x['target']}: {x['measured']:.2f} {'met' if x['met'] else 'NOT met'}" for x in g))

print("\nratios, after (median over rounds):\n")
rat = {}
for f in sorted(glob.glob(f"{d}/contention-after-*.json")):
    for x in json.load(open(f))["contention"]["ratios"]:
        rat.setdefault((x["layout"], x["name"]), []).append(x)
for (layout, name), xs in rat.items():
    print(f"  {layout} {name}: cycles/s {med([x['cycles_per_s'] for x in xs]):.2f}x, p99.9 {med([x['acquire_p999'] for x in xs]):.2f}x, "
          f"server µs/cycle {med([x['server_cpu_us_per_cycle'] for x in xs]):.2f}x")

sb, sa = std("before"), std("after")
print("\nstandard scenarios (redlock), medians: after/before\n")
for sc in sa:
    if sc in sb:
        cb, ca = med([r["cycles_per_s"] for r in sb[sc]]), med([r["cycles_per_s"] for r in sa[sc]])
        pb, pa = med([r["acquire_us"]["p99"] for r in sb[sc]]), med([r["acquire_us"]["p99"] for r in sa[sc]])
        print(f"  {sc}: cycles/s {cb:,.0f} -> {ca:,.0f} ({ca/cb:.2f}x), acquire p99 {pb:.0f} -> {pa:.0f} µs")
