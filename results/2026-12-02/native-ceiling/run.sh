#!/usr/bin/env bash
# The standard scenarios on 5 spawned Valkey 9.1.2 nodes, redlock waiting `smart` (release
# notifications: a release is DELIFEQ + EXISTS key:wait per node) and `plain` (no notifications: a
# release is DELIFEQ alone), against both ceilings of the same nodes: SET NX PX + EVALSHA release
# (naive) and SET NX PX + DELIFEQ (native). RUNS runs.
#   CARGO_TARGET_DIR=/tmp/ab-target cargo build --release -p loadgen
#   LOADGEN=/tmp/ab-target/release/loadgen RUNS=3 scripts/with-server valkey results/2026-12-02/native-ceiling/run.sh
#   python3 results/2026-12-02/native-ceiling/summarize.py
set -euo pipefail
cd "$(dirname "$0")"
RUNS=${RUNS:-3}
for i in $(seq 1 "$RUNS"); do
  echo "== $i, load $(cut -d' ' -f1-3 /proc/loadavg), server ${SERVER:-valkey}" >&2
  "$LOADGEN" --server "${SERVER:-valkey}" --engine redlock,ceiling --waiting smart,plain --quiet \
    --json "${TAG:-V}-$i.json" > "${TAG:-V}-$i.txt"
done
