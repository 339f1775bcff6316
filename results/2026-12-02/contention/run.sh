#!/usr/bin/env bash
# Issue 29, the cross-process hand-off: the plain lock on 4 keys with 64 workers in one process (scenario
# (c), the reference), in 4 processes x 16 and in 16 processes x 4; rslock in the same runs; and the
# standard scenarios (a), (b), (c) for the uncontended path. BEFORE (the parent, 17c1d16) and AFTER
# (branch contend) alternate, 3 rounds; 5 spawned redis-server 7.0.15 nodes per run.
#   BEFORE=/path/loadgen-before AFTER=/path/loadgen-after results/2026-12-02/contention/run.sh
# Build each with: CARGO_TARGET_DIR=/tmp/contend-target cargo build --release -p loadgen
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
rounds="${ROUNDS:-3}"
for r in $(seq 1 "$rounds"); do
  for build in before after; do
    bin=BEFORE; [ "$build" = after ] && bin=AFTER
    exe="${!bin}"
    "$exe" --engine redlock,rslock --concurrency 64 --keys 4 --duration 5s \
      --json "$out/c1p-$build-$r.json" > "$out/c1p-$build-$r.txt" 2>&1
    "$exe" --engine redlock,rslock --concurrency 64 --keys 4 --processes 4 --duration 5s \
      --json "$out/c4p-$build-$r.json" > "$out/c4p-$build-$r.txt" 2>&1
    "$exe" --engine redlock,rslock --concurrency 64 --keys 4 --processes 16 --duration 5s \
      --json "$out/c16p-$build-$r.json" > "$out/c16p-$build-$r.txt" 2>&1
    "$exe" --engine redlock --scenario standard --duration 5s \
      --json "$out/std-$build-$r.json" > "$out/std-$build-$r.txt" 2>&1
  done
done
