#!/usr/bin/env bash
# The plain lock's cross-process hand-off. Three builds alternate, ROUNDS rounds (default 3):
#   before  the parent, 17c1d16
#   after   branch contend, defaults (Config::cross_process_handoff off)
#   handoff branch contend with the hand-off on (LOADGEN_CROSS_PROCESS_HANDOFF=1, inherited by the
#           worker processes)
# Each: 64 workers on 4 keys in one process (scenario (c), the reference), in 4 processes x 16 and in
# 16 processes x 4, redlock and rslock in the same run; then the standard scenarios (a), (b), (c)
# (redlock only, the uncontended path). 5 spawned redis-server 7.0.15 nodes per loadgen run.
#   BEFORE=/tmp/contend-bin/loadgen-before AFTER=/tmp/contend-bin/loadgen-after \
#     results/2026-12-02/contention/run.sh        (OUT=dir writes the runs there; summarize.py [dir])
# Build each with: CARGO_TARGET_DIR=/tmp/contend-target cargo build --release -p loadgen
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
rounds="${ROUNDS:-3}"
run() { # build exe env...
  local build="$1" exe="$2"; shift 2
  env "$@" "$exe" --engine redlock,rslock --concurrency 64 --keys 4 --duration 5s \
    --json "$out/c1p-$build-$r.json" > "$out/c1p-$build-$r.txt" 2>&1
  env "$@" "$exe" --engine redlock,rslock --concurrency 64 --keys 4 --processes 4 --duration 5s \
    --json "$out/c4p-$build-$r.json" > "$out/c4p-$build-$r.txt" 2>&1
  env "$@" "$exe" --engine redlock,rslock --concurrency 64 --keys 4 --processes 16 --duration 5s \
    --json "$out/c16p-$build-$r.json" > "$out/c16p-$build-$r.txt" 2>&1
  env "$@" "$exe" --engine redlock --scenario standard --duration 5s \
    --json "$out/std-$build-$r.json" > "$out/std-$build-$r.txt" 2>&1
}
for r in $(seq 1 "$rounds"); do
  echo "round $r: $(uptime)" >> "$out/load.txt"
  run before "$BEFORE" X=0
  run after "$AFTER" X=0
  run handoff "$AFTER" LOADGEN_CROSS_PROCESS_HANDOFF=1
done
