#!/usr/bin/env bash
# Issue 27's loadgen benchmark: the standard scenarios on 5 spawned Valkey 9.1.2 nodes, redlock with
# native commands (N) against the same build forced to the scripts (S, LOADGEN_SCRIPTS_ONLY=1), and
# the redis-benchmark ceiling on the same nodes (SET NX PX + EVALSHA release), alternating, RUNS pairs.
#   LOADGEN=target/release/loadgen scripts/with-server valkey results/2026-12-01/native-loadgen/run.sh
#   python3 results/2026-12-01/native-loadgen/summarize.py
set -euo pipefail
cd "$(dirname "$0")"
RUNS=${RUNS:-3}
for i in $(seq 1 "$RUNS"); do
  for side in N S; do
    echo "== $side $i, load $(cut -d' ' -f1-3 /proc/loadavg), $(redis-server --version | cut -c1-40)" >&2
    if [[ $side == S ]]; then export LOADGEN_SCRIPTS_ONLY=1; else unset LOADGEN_SCRIPTS_ONLY; fi
    "$LOADGEN" --engine redlock,ceiling --quiet --json "$side-$i.json" > "$side-$i.txt"
  done
done
