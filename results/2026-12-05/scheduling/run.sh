#!/usr/bin/env bash
# Where the tail at 4 and 16 processes goes: samples /proc/PID/schedstat (CPU ns, ns waiting on the
# run queue, slices) of every loadgen and redis-server process over 3 s in the middle of a 6 s run,
# 64 workers on 4 keys in P processes, hold 0, on 5 nodes loadgen starts itself.
#   P=16 scripts/with-redis results/2026-12-05/scheduling/run.sh   (from the repository root)
set -euo pipefail
d=$(mktemp -d)
target/release/loadgen --engine redlock --processes "${P:-16}" --concurrency 64 --keys 4 --duration 6s > "$d/run.txt" 2>&1 &
lg=$!
sleep 2.5
snap() {
  for p in $(pgrep -f 'target/release/loadgen|redis-server'); do
    [ -r "/proc/$p/schedstat" ] && echo "$p $(cat "/proc/$p/comm") $(cat "/proc/$p/schedstat")" || true
  done
}
snap > "$d/a.txt"
sleep 3
snap > "$d/b.txt"
wait "$lg"
D="$d" python3 - <<'PY'
import os
d = os.environ["D"]
a = {l.split()[0]: l.split() for l in open(f"{d}/a.txt")}
b = {l.split()[0]: l.split() for l in open(f"{d}/b.txt")}
tot = {}
for pid, x in b.items():
    if pid not in a:
        continue
    y = a[pid]
    t = tot.setdefault(x[1], [0, 0, 0, 0])
    t[0] += (int(x[2]) - int(y[2])) / 3e9
    t[1] += (int(x[3]) - int(y[3])) / 3e9
    t[2] += int(x[4]) - int(y[4])
    t[3] += 1
for comm, (cpu, wait, slices, n) in tot.items():
    per = wait * 3 / slices * 1e6 if slices else 0
    print(f"{comm}: {n} procs, cpu {cpu:.2f} cores, run-queue wait {wait:.2f} process-s per s "
          f"({wait / n:.0%} of each one's time), {slices / 3:.0f} slices/s, mean wait per slice {per:.0f} us")
PY
grep -E "^  redlock " "$d/run.txt"
rm -rf "$d"
