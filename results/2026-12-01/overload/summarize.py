#!/usr/bin/env python3
"""Median table of the overload runs in DIR labelled LABEL (<scenario>-<label>-<run>.json), as Markdown.

Medians over the runs; ratios are computed within each run (same-run), then their median is taken.
Usage: summarize.py DIR LABEL
"""
import glob, json, os, statistics, sys

d, label = sys.argv[1], sys.argv[2]

def docs(scenario):
    files = sorted(glob.glob(os.path.join(d, f"{scenario}-{label}-*.json")))
    return [(os.path.basename(f), json.load(open(f))) for f in files]

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

def fmt(x, digits=0):
    return "n/a" if x is None else f"{x:,.{digits}f}"

def causes(maps):
    """Each cause with its count in every run (`a / b / c`): a cause seen in one run only would have a
    median of 0."""
    keys = sorted({k for m in maps for k in m})
    return "; ".join(f"{k}: {' / '.join(fmt(m.get(k, 0)) for m in maps)}" for k in keys) or "-"

def load(doc):
    m = doc["machine"]
    return f"{m.get('loadavg_start')}→{m.get('loadavg_end')}"

def section(scenario, runs, columns):
    """The heading and the table head of one scenario's section: every section names its runs and lays
    out its columns alike."""
    out.append(f"### {scenario} ({len(runs)} runs: {', '.join(f for f, _ in runs)})\n")
    out.append("| " + " | ".join(columns) + " |")
    out.append("|" + "---|" * len(columns))

def rows_by(runs, field, key):
    """The records of every run's `field`, (record, its run's document) by `key` of the record, in the
    order first seen: one table row a key, its figures the medians over the runs."""
    rows = {}
    for _, doc in runs:
        for r in doc[field]:
            rows.setdefault(key(r), []).append((r, doc))
    return rows

out = []
b = docs("burst")
if b:
    section("burst", b, ["engine", "B", "success rate", "drain s", "goodput/s", "(b) cycles/s", "goodput ÷ (b)",
                         "redlock ÷ rslock goodput", "failures by cause (per run)", "failed releases",
                         "load avg (1 min, per run)"])
    for (lab, size), rs in rows_by(b, "burst", lambda r: (r["label"], r["burst"])).items():
        ratio = []
        for r, doc in rs:
            peer = [p for p in doc["burst"] if p["label"] == "rslock" and p["burst"] == size]
            if lab != "rslock" and peer and peer[0]["goodput_per_s"] > 0:
                ratio.append(r["goodput_per_s"] / peer[0]["goodput_per_s"])
        out.append(f"| {lab} | {size:,} | {fmt(med([r['success_rate']*100 for r, _ in rs]), 2)}% | {fmt(med([r['drain_s'] for r, _ in rs]), 2)} | "
                   f"{fmt(med([r['goodput_per_s'] for r, _ in rs]))} | {fmt(med([r['b_cycles_per_s'] for r, _ in rs]))} | "
                   f"{fmt(med([r['goodput_vs_b'] for r, _ in rs]), 3)} | {fmt(med(ratio), 3) if ratio else '-'} | "
                   f"{causes([r['failures'] for r, _ in rs])} | {fmt(med([r['failed_releases'] for r, _ in rs]))} | "
                   f"{', '.join(str(r['loadavg'][0]) for r, _ in rs)} |")
    out.append("")
h = docs("held")
if h:
    section("held", h, ["engine", "H", "hold s", "acquired", "lost (any time)", "lost at end", "renewals/s",
                        "expected/s", "client CPU µs/renewal", "server CPU µs/renewal (all nodes)",
                        "EVALSHA/renewal", "failures by cause (per run)", "load avg (1 min, per run)"])
    for (lab, size), rs in rows_by(h, "held", lambda r: (r["label"], r["held"])).items():
        rs = [r for r, _ in rs]
        if not rs[0]["supported"]:
            out.append(f"| {lab} | {size:,} | | n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a | {rs[0]['note']} | |")
            continue
        per = [r["evalsha_calls"] / r["renewals"] if r["renewals"] else None for r in rs]
        out.append(f"| {lab} | {size:,} | {fmt(med([r['hold_s'] for r in rs]), 1)} | {fmt(med([r['acquired'] for r in rs]))} | "
                   f"{fmt(med([r['lost'] for r in rs]))} | {fmt(med([r['lost_at_end'] for r in rs]))} | "
                   f"{fmt(med([r['renewals_per_s'] for r in rs]))} | {fmt(med([r['expected_renewals_per_s'] for r in rs]))} | "
                   f"{fmt(med([r['client_cpu_us_per_renewal'] for r in rs]), 1)} | {fmt(med([r['server_cpu_us_per_renewal'] for r in rs]), 1)} | "
                   f"{fmt(med(per), 2)} | {causes([r['failures'] for r in rs])} | {', '.join(str(r['loadavg'][0]) for r in rs)} |")
    out.append("")
o = docs("overload")
if o:
    section("overload", o, ["engine", "scenario", "cycles/s", "overload ÷ (b)", "redlock ÷ rslock cycles/s",
                            "acquire p50 ms", "acquire p99 ms", "failed acquires by cause (per run)",
                            "failed releases by cause (per run)", "load avg (1 min, run start)"])
    for (lab, sc), rs in rows_by(o, "runs", lambda r: (r["label"], r["scenario"])).items():
        vs_b = [doc["overload_vs_b"].get(lab) for _, doc in rs] if sc == "overload" else []
        ratio = [doc["ratios"].get(sc, {}).get("redlock/rslock", {}).get("cycles_per_s") for _, doc in rs] if lab == "redlock" else []
        p = lambda k: med([r["acquire_us"][k] / 1e3 if r["acquire_us"] else None for r, _ in rs])
        out.append(f"| {lab} | {sc} | {fmt(med([r['cycles_per_s'] for r, _ in rs]))} | {fmt(med(vs_b), 3) if vs_b else '-'} | "
                   f"{fmt(med(ratio), 3) if ratio else '-'} | {fmt(p('p50'), 2)} | {fmt(p('p99'), 2)} | "
                   f"{causes([r['failed_acquires'] for r, _ in rs])} | {causes([r['failed_releases'] for r, _ in rs])} | "
                   f"{', '.join(load(doc) for _, doc in rs)} |")
    out.append("")
print("\n".join(out))
