#!/usr/bin/env bash
# The pipelined connection's writer after the outbox change (unwritten bytes kept where a thread
# without the runtime can write them; plain TCP written with try_write as far as the socket takes
# it), against its parent 36ac7c0. Two builds alternate, ROUNDS rounds (default 3), each
# `loadgen --engine redlock --scenario standard --duration 5s` ((a) 1 worker, (b) 64 workers on
# distinct keys, (c) 64 workers on 4 keys; 5 nodes loadgen starts itself).
#   BEFORE=<36ac7c0's loadgen> AFTER=<this build's loadgen> ROUNDS=3 scripts/with-redis results/2026-12-04/pipeline-outbox/run.sh
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
