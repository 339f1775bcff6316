#!/usr/bin/env python3
"""Summarizes run.sh's rounds: per step (layout and lock), each round's redlock figures for both builds
and their same-round after/before ratio with its median; for the exclusive lock also redlock/rslock in
the same run. Run from anywhere: python3 summarize.py [DIR] (DIR: the runs' directory, default this
one)."""
import glob, json, os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../lib"))
import summary

here = summary.run_dir(__file__)
fields = [
    ("cycles/s", lambda r: r["cycles_per_s"], "{:,.0f}"),
    ("acquire p99.9 ms", lambda r: r["acquire_us"]["p999"] / 1000, "{:.1f}"),
    ("node commands/grant", lambda r: r["node_commands_per_grant"], "{:.2f}"),
    ("server µs/grant", lambda r: r["server_cpu_us_per_cycle"], "{:.0f}"),
    ("client µs/grant", lambda r: r["client_cpu_us_per_cycle"], "{:.0f}"),
    ("attempts/acquire", lambda r: r["attempts_per_acquire"], "{:.2f}"),
    ("max overtakes", lambda r: r["max_overtakes"], "{:.0f}"),
]


def engine(doc, name):
    return next((x for x in doc["runs"] if x["engine"] == name), None)


steps = sorted({os.path.basename(p).rsplit("-", 2)[0] for p in glob.glob(f"{here}/*-before-*.json")})
for step in steps:
    rounds = sorted({int(p.rsplit("-", 1)[1].split(".")[0]) for p in glob.glob(f"{here}/{step}-after-*.json")})
    docs = {b: [json.load(open(f"{here}/{step}-{b}-{r}.json")) for r in rounds] for b in ("before", "after")}
    print(f"{step}, {len(rounds)} alternating rounds (before | after | after/before per round, median):")
    for name, get, f in fields:
        bb = [get(engine(d, "redlock")) for d in docs["before"]]
        aa = [get(engine(d, "redlock")) for d in docs["after"]]
        pair = [a / o for a, o in zip(aa, bb) if o]
        # A figure that is 0 before (no overtakes in one process) has no ratio.
        ratio = f" | {', '.join(f'{p:.2f}' for p in pair)} (median {summary.median(pair):.2f}x)" if pair else ""
        print(f"  {name}: {', '.join(f.format(x) for x in bb)} | {', '.join(f.format(x) for x in aa)}{ratio}")
    if engine(docs["after"][0], "rslock"):
        for b in ("before", "after"):
            ratios = [engine(d, "redlock")["cycles_per_s"] / engine(d, "rslock")["cycles_per_s"] for d in docs[b]]
            print(f"  redlock/rslock same run, {b}: {', '.join(f'{x:.2f}' for x in ratios)}"
                  f" (median {summary.median(ratios):.2f}x)")
