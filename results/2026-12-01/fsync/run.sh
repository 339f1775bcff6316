#!/usr/bin/env bash
# What `appendfsync` costs a pipelined lock client. loadgen's standard scenarios with
# redlock, rslock and the ceiling, on 5 nodes it spawns with `--persistence none|everysec|always` (the AOF
# in a directory of each node's own under the system temp dir; /tmp is the VM's disk here, not tmpfs), modes
# alternating, ROUNDS rounds, runs FIRST.. numbered.
#   results/2026-12-01/fsync/run.sh                          # ROUNDS=3
#   python3 results/2026-12-01/fsync/summarize.py > results/2026-12-01/fsync/table.md
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=results/2026-12-01/fsync
ROUNDS=${ROUNDS:-3}
FIRST=${FIRST:-1}
LG=${LG:-target/release/loadgen}
[[ -x $LG ]] || cargo build --release -p loadgen
for r in $(seq "$FIRST" $((FIRST + ROUNDS - 1))); do
  for mode in none everysec always; do
    echo "== round $r, persistence $mode, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    "$LG" --persistence "$mode" --engine redlock,rslock,ceiling --json "$OUT/$mode-$r.json" > "$OUT/$mode-$r.txt"
  done
done
