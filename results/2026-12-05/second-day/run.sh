#!/usr/bin/env bash
# This session's whole change (hand-off trim, the default wait, lost/is_held, busy errors, fencing,
# one way in: loadgen now takes its locks through the request) against the session's parent
# (f2c59ee), the standard scenarios: two builds alternate, ROUNDS rounds (default 3; 5 here), each
# `loadgen --engine redlock --scenario standard --duration 5s` ((a) 1 worker, (b) 64 workers on
# distinct keys, (c) 64 workers on 4 keys; 5 nodes loadgen starts itself).
#   BEFORE=<f2c59ee's loadgen> AFTER=<this build's loadgen> ROUNDS=5 scripts/with-redis results/2026-12-05/second-day/run.sh
# Build each with: cargo build --release -p loadgen (copy target/release/loadgen aside per build).
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
rounds="${ROUNDS:-3}"
for r in $(seq 1 "$rounds"); do
  for build in before after; do
    exe="$BEFORE"; [ "$build" = after ] && exe="$AFTER"
    echo "round $r $build: $(uptime)" >> "$out/load.txt"
    "$exe" --engine redlock --scenario standard --duration 5s \
      --json "$out/std-$build-$r.json" > "$out/std-$build-$r.txt" 2>&1
  done
done
