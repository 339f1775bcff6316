#!/usr/bin/env bash
# This session's change (rooms by concept, operations named, one render per dialect, no circle of files,
# one parser and one spawner, memory nodes, leader election) against the session's parent
# (98c0270), the standard scenarios: two builds alternate in ABBA order (odd rounds before then after,
# even rounds after then before, so a drift in the machine's load hits both alike), ROUNDS rounds
# (default 6), each `loadgen --engine redlock --scenario standard --duration 5s` ((a) 1 worker,
# (b) 64 workers on distinct keys, (c) 64 workers on 4 keys; 5 nodes loadgen starts itself).
#   BEFORE=<98c0270's loadgen> AFTER=<HEAD's loadgen> scripts/with-redis results/2026-12-05/operations/run.sh
# Build each with: cargo build --release -p loadgen (copy target/release/loadgen aside per build),
# then: python3 results/2026-12-05/operations/summarize.py
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
rounds="${ROUNDS:-6}"
for r in $(seq 1 "$rounds"); do
  order="before after"; [ $((r % 2)) = 0 ] && order="after before"
  for build in $order; do
    exe="$BEFORE"; [ "$build" = after ] && exe="$AFTER"
    echo "round $r $build: $(uptime)" >> "$out/load.txt"
    "$exe" --engine redlock --scenario standard --duration 5s \
      --json "$out/std-$build-$r.json" > "$out/std-$build-$r.txt" 2>&1
  done
done
