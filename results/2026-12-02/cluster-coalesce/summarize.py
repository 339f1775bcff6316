#!/usr/bin/env python3
"""Medians over run.sh's rounds: per scenario, build A (parent) and B (change) on three 3-master
clusters (C) and on three standalone masters (S), B's fred run beside, with same-round ratios.
   python3 results/2026-12-02/cluster-coalesce/summarize.py [DIR]"""
import glob, json, os, statistics, sys

here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
med = statistics.median
rounds = []
for ca in sorted(glob.glob(os.path.join(here, "C-A-*.json"))):
    files = {k: ca.replace("C-A-", k + "-") for k in ("C-A", "C-B", "S-A", "S-B")}
    if not all(os.path.exists(f) for f in files.values()):
        continue
    runs, load = {}, []
    for k, f in files.items():
        d = json.load(open(f))
        load.append(d["machine"]["loadavg_start"])
        for r in d["runs"]:
            runs[(k, r["engine"], r["scenario"])] = r
    rounds.append((runs, load))
print(f"rounds: {len(rounds)}; load at start (C-A, C-B, S-A, S-B): "
      + "; ".join("/".join(str(x) for x in l) for _, l in rounds) + "\n")
cols = ["C-A", "C-B", "fred", "S-A", "S-B"]
def get(runs, col, sc):
    return runs[("C-B", "redlock-fred", sc)] if col == "fred" else runs[(col, "redlock", sc)]
print("| scenario | metric | " + " | ".join(cols) + " | C-B / C-A | C-B / fred | C-B / S-B | S-B / S-A |")
print("|---|---|" + "---:|" * (len(cols) + 4))
metrics = [("cycles/s", lambda r: r["cycles_per_s"], "{:,.0f}"),
           ("client µs/cycle", lambda r: r["client_cpu_us_per_cycle"], "{:.1f}"),
           ("server µs/cycle", lambda r: r.get("server_cpu_us_per_cycle") or 0, "{:.1f}"),
           ("acquire p50 µs", lambda r: r["acquire_us"]["p50"], "{:.0f}"),
           ("acquire p99 µs", lambda r: r["acquire_us"]["p99"], "{:.0f}")]
for sc in "abc":
    for name, f, fmt in metrics:
        vals = {c: med([f(get(runs, c, sc)) for runs, _ in rounds]) for c in cols}
        def ratio(x, y):
            rs = [f(get(runs, x, sc)) / max(f(get(runs, y, sc)), 1e-9) for runs, _ in rounds]
            return f"{med(rs):.2f}"
        print(f"| {sc} | {name} | " + " | ".join(fmt.format(vals[c]) for c in cols)
              + f" | {ratio('C-B', 'C-A')} | {ratio('C-B', 'fred')} | {ratio('C-B', 'S-B')} | {ratio('S-B', 'S-A')} |")
print("\nper run (cycles/s):")
for i, (runs, load) in enumerate(rounds, 1):
    for sc in "abc":
        print(f"  round {i} {sc}: " + ", ".join(f"{c} {get(runs, c, sc)['cycles_per_s']:,.0f}" for c in cols))
