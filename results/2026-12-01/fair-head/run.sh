#!/usr/bin/env bash
# Fair lock with head-only wake-ups (this branch) against its parent ef97f01 (every release wakes every
# waiter), and the exclusive lock, in alternating rounds on the same machine: 64 workers on 4 keys in
# 4 loadgen processes. The parent engine is built with this branch's loadgen (so it reports max
# overtakes too: loadgen/ does not depend on the engine change). Output: one JSON + one text table
# per run in this directory, the load average before each run.
# Usage (from the repository root): results/2026-12-01/fair-head/run.sh [rounds] [first round's number]
# SKIP_BUILD=1 uses the binaries already built (a README edit alone rebuilds the engine: lib.rs includes it).
set -euo pipefail
rounds=${1:-2}
first=${2:-1}
here=results/2026-12-01/fair-head
parent=/tmp/fair-parent
# This branch's loadgen.
[ -n "${SKIP_BUILD:-}" ] || CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target} cargo build --release -p loadgen
new=${CARGO_TARGET_DIR:-target}/release/loadgen
# The parent's engine with this branch's loadgen, in its own directory and target dir.
if [ ! -x "$parent/target/release/loadgen" ]; then
  rm -rf "$parent" && mkdir -p "$parent"
  git archive ef97f01 | tar -x -C "$parent"
  rm -rf "$parent/loadgen" && git archive HEAD loadgen | tar -x -C "$parent"
  (cd "$parent" && CARGO_TARGET_DIR="$parent/target" cargo build --release -p loadgen)
fi
old=$parent/target/release/loadgen
args=(--engine redlock --concurrency 64 --keys 4 --processes 4)
run() {
  local name=$1 bin=$2 lock=$3
  echo "# $name: $(uptime)" | tee -a "$here/loadavg.txt"
  # A run that fails (a node too slow to answer on a loaded machine) is reported and the rounds go on.
  if scripts/with-redis "$bin" "${args[@]}" --lock "$lock" --json "$here/$name.json" > "$here/$name.txt" 2> "$here/$name.err"; then
    grep -E '^  redlock ' "$here/$name.txt"
  else
    echo "$name failed: $(tail -1 "$here/$name.err")" | tee -a "$here/loadavg.txt"
  fi
}
for i in $(seq "$first" $((first + rounds - 1))); do
  run "exclusive-$i" "$new" exclusive
  run "fair-head-$i" "$new" fair
  run "fair-parent-$i" "$old" fair
done
