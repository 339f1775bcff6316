"""What the dated results/<date>/<topic>/summarize.py scripts share: where the runs are, loadgen's JSON
runs per side or per build and round, medians and same-run ratios, and the tables printed from them.
A summarize.py imports it by its path from the script's own directory, so it runs from anywhere:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../lib"))
    import summary
"""
import glob
import json
import os
import statistics
import sys

median = statistics.median


def run_dir(script):
    """The directory of the runs: the command line's first argument, else the summarize.py's own
    directory (`script` is its __file__)."""
    return sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(script))


def get(doc, engine, scenario, key):
    """One engine's figure in one standard scenario of a loadgen JSON document: the value of `key`, or
    its p50 where it is a latency summary; None where the run is not in the document."""
    for x in doc["runs"]:
        if x["engine"] == engine and x["scenario"] == scenario:
            v = x[key]
            return v["p50"] if isinstance(v, dict) else v


# A/B runs named by side: A-1.json, B-1.json, ... (scripts/ab-rounds without --out).

def _cycles(runs, engine, scenario):
    return runs[(engine, scenario)]["cycles_per_s"]


def _p50(runs, engine, scenario):
    return runs[(engine, scenario)]["acquire_us"]["p50"]


# The figures a side's table can show, by column name: redlock's unless the name says otherwise, "vs"
# being the same-run ratio to the other engine. Each takes the JSON document and its runs by
# (engine, scenario).
SIDE_FIGURES = {
    "b cycles/s": lambda doc, runs: _cycles(runs, "redlock", "b"),
    "b vs rslock": lambda doc, runs: _cycles(runs, "redlock", "b") / _cycles(runs, "rslock", "b"),
    "b vs ceiling": lambda doc, runs: _cycles(runs, "redlock", "b") / _cycles(runs, "ceiling", "b"),
    "a p50 us": lambda doc, runs: _p50(runs, "redlock", "a"),
    "a p50 vs rslock": lambda doc, runs: _p50(runs, "redlock", "a") / _p50(runs, "rslock", "a"),
    "c cycles/s": lambda doc, runs: _cycles(runs, "redlock", "c"),
    "c vs rslock": lambda doc, runs: _cycles(runs, "redlock", "c") / _cycles(runs, "rslock", "c"),
    "b client cpu us": lambda doc, runs: runs[("redlock", "b")]["client_cpu_us_per_cycle"],
    "b server cpu us": lambda doc, runs: runs[("redlock", "b")]["server_cpu_us_per_cycle"],
    "b rslock client cpu us": lambda doc, runs: runs[("rslock", "b")]["client_cpu_us_per_cycle"],
    "load": lambda doc, runs: doc["machine"]["loadavg_start"],
}


def side_rows(directory, pattern, columns):
    """{side: [{column: figure}, ...]}, one dict per JSON file in `directory` matching `pattern` (e.g.
    "[AB]-*.json"), in name order; a file's side is the first letter of its name, `columns` are names
    from SIDE_FIGURES."""
    rows = {}
    for path in sorted(glob.glob(os.path.join(directory, pattern))):
        side = os.path.basename(path)[0]
        doc = json.load(open(path))
        runs = {(r["engine"], r["scenario"]): r for r in doc["runs"]}
        rows.setdefault(side, []).append({c: SIDE_FIGURES[c](doc, runs) for c in columns})
    return rows


def print_side_medians(rows):
    """A Markdown table of side_rows' rows: per side, the number of runs and the median of each figure
    (the columns are the first row's keys, in its order)."""
    keys = list(next(iter(rows.values()))[0].keys())
    print("| side | runs | " + " | ".join(keys) + " |")
    print("|---|---:|" + "---:|" * len(keys))
    for side in sorted(rows):
        med = [median(r[k] for r in rows[side]) for k in keys]
        print(f"| {side} | {len(rows[side])} | " + " | ".join(f"{m:,.2f}" for m in med) + " |")


# Builds in rounds: contention-before-1.json, std-after-1.json, ... (scripts/ab-rounds --out DIR).

def print_contention_and_standard(d):
    """Medians over the rounds of `loadgen --scenario contention` (contention-BUILD-R.json: per layout,
    lock and engine, before -> after; the goals and ratios loadgen reports for the after build) and of
    the standard scenarios (std-BUILD-R.json: cycles/s and acquire p99, after/before)."""

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

    def m(rs, figure):
        return median([figure(r) for r in rs])

    cyc = lambda r: r["cycles_per_s"]
    p99 = lambda r: r["acquire_us"]["p99"] / 1000
    p999 = lambda r: r["acquire_us"]["p999"] / 1000
    pf = lambda r: r["process_fairness"] or 1.0  # None (one process) counts as perfectly fair
    ov = lambda r: r["max_overtakes"]
    ovm = lambda r: r["overtakes_per_grant"]
    srv = lambda r: r["server_cpu_us_per_cycle"]

    b, a = rows("before"), rows("after")
    n = len(glob.glob(f"{d}/contention-after-*.json"))
    print(f"contention, medians of {n} rounds (before -> after)\n")
    print("| layout | lock | engine | cycles/s | p99 ms | p99.9 ms | procs fairness | overtakes max/mean | server µs/cycle |")
    print("|---|---|---|---:|---:|---:|---:|---|---:|")
    for key in a:
        if key not in b:
            continue
        B, A = b[key], a[key]
        print(f"| {key[0]} | {key[1]} | {key[2]} | {m(B,cyc):,.0f} → **{m(A,cyc):,.0f}** | {m(B,p99):.1f} → {m(A,p99):.1f} "
              f"| {m(B,p999):.1f} → **{m(A,p999):.1f}** | {m(B,pf):.3f} → {m(A,pf):.3f} | {m(B,ov):.0f}/{m(B,ovm):.2f} → {m(A,ov):.0f}/{m(A,ovm):.2f} "
              f"| {m(B,srv):.0f} → {m(A,srv):.0f} |")

    print("\ngoals, after, per round:\n")
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
        print(f"  {layout} {name}: cycles/s {m(xs, lambda x: x['cycles_per_s']):.2f}x, p99.9 {m(xs, lambda x: x['acquire_p999']):.2f}x, "
              f"server µs/cycle {m(xs, lambda x: x['server_cpu_us_per_cycle']):.2f}x")

    sb, sa = std("before"), std("after")
    print("\nstandard scenarios (redlock), medians: after/before\n")
    for sc in sa:
        if sc in sb:
            cb, ca = m(sb[sc], cyc), m(sa[sc], cyc)
            pb, pa = m(sb[sc], lambda r: r["acquire_us"]["p99"]), m(sa[sc], lambda r: r["acquire_us"]["p99"])
            print(f"  {sc}: cycles/s {cb:,.0f} -> {ca:,.0f} ({ca/cb:.2f}x), acquire p99 {pb:.0f} -> {pa:.0f} µs")
