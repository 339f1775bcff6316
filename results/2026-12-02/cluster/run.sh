#!/usr/bin/env bash
# Redis Cluster node sets on the engine's pipelined transport against fred, and against
# standalone masters. Starts three local 3-master clusters (9 redis-servers, no replicas) and three
# standalone masters on loopback ports from $BASE (default 7400), then alternates, RUNS times:
#   C: loadgen on the three clusters (`redis-cluster://` node sets), engines redlock and redlock-fred
#   S: loadgen on the three standalone masters, engine redlock
# each `--scenario standard` ((a) 1 worker, (b) 64 workers on distinct keys, (c) 64 workers on 4 keys).
#   CARGO_TARGET_DIR=/tmp/ab-target cargo build --release -p loadgen
#   LOADGEN=/tmp/ab-target/release/loadgen RUNS=3 scripts/with-redis results/2026-12-02/cluster/run.sh
#   python3 results/2026-12-02/cluster/summarize.py
set -euo pipefail
cd "$(dirname "$0")"
RUNS=${RUNS:-3}
. ../../lib/cluster-sets.sh
start_sets 3
for i in $(seq 1 "$RUNS"); do
  for side in C S; do
    echo "== $side $i, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    if [[ $side == C ]]; then
      "$LOADGEN" --nodes "$cnodes" --engine redlock,redlock-fred --quiet --json "C-$i.json" > "C-$i.txt"
    else
      "$LOADGEN" --nodes "$standalone" --engine redlock --quiet --json "S-$i.json" > "S-$i.txt"
    fi
  done
done
