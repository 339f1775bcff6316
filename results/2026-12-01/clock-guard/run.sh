#!/usr/bin/env bash
# Cost of the clock-jump guard (one TIME per node before each acquire): loadgen's standard scenarios
# with redlock and rslock, the guard on (the default) and off, alternating, RUNS pairs.
#   ON=/tmp/loadgen-guard-on OFF=/tmp/loadgen-guard-off results/2026-12-01/clock-guard/run.sh
# ON: the release loadgen of the commit under test; OFF: the same tree with `clock_guard: false` as the
# default in src/config.rs (the only difference).
set -euo pipefail
cd "$(dirname "$0")"
RUNS=${RUNS:-3}
for i in $(seq 1 "$RUNS"); do
  for side in on off; do
    bin=$([[ $side == on ]] && echo "$ON" || echo "$OFF")
    echo "== $side $i, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    "$bin" --engine redlock,rslock --json "$side-$i.json" > "$side-$i.txt"
  done
done
