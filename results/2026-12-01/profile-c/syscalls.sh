#!/usr/bin/env bash
# Syscalls and context switches of loadgen's process alone in a (b) run: five redis-servers started
# here (ports 42101-42105, stopped by pid at the end) so `perf stat` counts only the client.
#   results/2026-12-01/profile-c/syscalls.sh /tmp/loadgen-B /tmp/loadgen-C
set -euo pipefail
out=$(mktemp -d)
pids=()
urls=""
for i in 1 2 3 4 5; do
  port=$((42100 + i))
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no > /dev/null 2>&1 &
  pids+=($!)
  urls+="redis://127.0.0.1:$port,"
done
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
sleep 0.5
for bin in "$@"; do
  perf stat -e raw_syscalls:sys_enter,context-switches -x, -o "$out/stat.txt" -- \
    "$bin" --nodes "${urls%,}" --engine redlock --concurrency 64 --keys 1000000 --duration 5s \
    --warmup 1s --quiet --json "$out/run.json"
  python3 - "$bin" "$out" <<'PY'
import json, sys
bin, out = sys.argv[1], sys.argv[2]
run = json.load(open(f"{out}/run.json"))["runs"][0]
stats = {l.split(",")[2]: int(l.split(",")[0]) for l in open(f"{out}/stat.txt") if l[:1].isdigit()}
# perf counts warm-up and connect too: divide by all cycles, the measured ones scaled by 6 s / 5 s.
cycles = run["cycles"] * 6 / 5
print(f"{bin}: {run['cycles_per_s']:,.0f} cycles/s, client {run['client_cpu_us_per_cycle']:.1f} µs/cycle, "
      f"{stats['raw_syscalls:sys_enter'] / cycles:.2f} syscalls and "
      f"{stats['context-switches'] / cycles:.3f} context switches per cycle (approx.)")
PY
done
