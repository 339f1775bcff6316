#!/usr/bin/env bash
# Cross-slot coalescing on cluster shards: build A (the parent) against build B (the
# change), alternating. Starts SETS (default 3) local 3-master clusters (3 x SETS redis-servers, no
# replicas) and SETS standalone masters on loopback ports from $BASE (default 7400) once, then RUNS
# rounds of
#   C-A, C-B: loadgen on the three clusters (`redis-cluster://` node sets); B also runs redlock-fred
#   S-A, S-B: loadgen on the three standalone masters (the standalone path must not regress)
# each `--scenario standard` ((a) 1 worker, (b) 64 workers on distinct keys, (c) 64 workers on 4 keys).
#   A=/tmp/bin/loadgen-base B=/tmp/bin/loadgen-xslot RUNS=3 SETS=3 OUT=dir \
#     scripts/with-redis results/2026-12-02/cluster-coalesce/run.sh
#   python3 results/2026-12-02/cluster-coalesce/summarize.py [dir]
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
RUNS=${RUNS:-3}
SETS=${SETS:-3}   # node sets: SETS clusters of 3 masters against SETS standalone masters
. "$(dirname "$0")/../../lib/cluster-sets.sh"
start_sets "$SETS"
for i in $(seq 1 "$RUNS"); do
  for run in C-A C-B S-A S-B; do
    echo "== $run $i, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    exe=$A engines=redlock nodes=$cnodes
    [[ $run == *-B ]] && exe=$B
    [[ $run == C-B ]] && engines=redlock,redlock-fred
    [[ $run == S-* ]] && nodes=$standalone
    "$exe" --nodes "$nodes" --engine "$engines" --quiet --json "$out/$run-$i.json" > "$out/$run-$i.txt"
  done
done
