#!/usr/bin/env python3
"""Node commands per grant, by command, for the exclusive and the fair lock at 1 x 64, 4 x 16 and
16 x 4 (64 workers on 4 keys, hold 0): what one node runs per successful lock cycle, a script's own
calls included (INFO commandstats), on 5 local redis-servers this script starts and stops.

    LOADGEN=target/release/loadgen python3 results/2026-12-04/commands-per-grant/count.py [out dir]

Each row: CONFIG RESETSTAT on every node, one `loadgen --engine redlock --nodes ... --concurrency 64
--keys 4 --processes P [--lock fair] --duration 5s --warmup 0s` run, then every node's
INFO commandstats; calls summed over the nodes, divided by 5 and by the run's cycles. loadgen's own
`node_commands_per_grant` (its measured phase only) is printed beside it."""
import json, os, signal, subprocess, sys, tempfile, time

LOADGEN = os.environ.get("LOADGEN", "target/release/loadgen")
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
PORTS = [int(os.environ.get("BASE_PORT", "7301")) + i for i in range(5)]
# `LAYOUTS=4:exclusive,16:exclusive` runs only those rows (default: all six).
LAYOUTS = [(int(x.split(":")[0]), x.split(":")[1]) for x in os.environ.get(
    "LAYOUTS", "1:exclusive,4:exclusive,16:exclusive,1:fair,4:fair,16:fair").split(",")]


def cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True, check=True).stdout


def commandstats(port):
    calls = {}
    for line in cli(port, "INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_"):
            name, rest = line[len("cmdstat_"):].split(":", 1)
            fields = dict(kv.split("=") for kv in rest.split(","))
            calls[name] = int(fields["calls"])
    return calls


def main():
    procs, dirs = [], []
    try:
        for port in PORTS:
            d = tempfile.mkdtemp(prefix="cpg-")
            dirs.append(d)
            procs.append(subprocess.Popen(
                ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", d],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for port in PORTS:
            for _ in range(100):
                try:
                    if cli(port, "PING").strip() == "PONG":
                        break
                except subprocess.CalledProcessError:
                    pass
                time.sleep(0.05)
        nodes = ",".join(f"redis://127.0.0.1:{p}" for p in PORTS)
        rows = []
        for processes, lock in LAYOUTS:
            for port in PORTS:
                cli(port, "FLUSHALL")
                cli(port, "CONFIG", "RESETSTAT")
            name = f"{processes}x{64 // processes}-{lock}"
            report = os.path.join(OUT, f"{name}.json")
            cmd = [LOADGEN, "--engine", "redlock", "--nodes", nodes, "--concurrency", "64", "--keys", "4",
                   "--processes", str(processes), "--duration", "5s", "--warmup", "0s", "--json", report]
            if lock == "fair":
                cmd += ["--lock", "fair"]
            with open(os.path.join(OUT, f"{name}.txt"), "w") as f:
                subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=True)
            total = {}
            for port in PORTS:
                for k, v in commandstats(port).items():
                    if k not in ("info", "config|resetstat", "flushall", "ping", "config"):
                        total[k] = total.get(k, 0) + v
            run = json.load(open(report))["runs"][0]
            cycles = run["cycles"]
            per = {k: v / len(PORTS) / cycles for k, v in total.items()}
            rows.append((name, run["cycles_per_s"], run.get("node_commands_per_grant"), sum(per.values()), per))
        with open(os.path.join(OUT, "table.md"), "w") as f:
            f.write("| layout, lock | cycles/s | node cmds/grant (loadgen, measured phase) | whole run | by command (> 0.05) |\n|---|---|---|---|---|\n")
            for name, cps, lg, whole, per in rows:
                top = ", ".join(f"{k.upper()} {v:.2f}" for k, v in sorted(per.items(), key=lambda kv: -kv[1]) if v > 0.05)
                lgs = f"{lg:.2f}" if lg is not None else "-"
                f.write(f"| {name} | {cps:,.0f} | {lgs} | {whole:.2f} | {top} |\n")
        print(open(os.path.join(OUT, "table.md")).read())
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait()


main()
