#!/usr/bin/env bash
# Cost of b4489b8 (a plain Lock checks the clock-jump log; an idle connection reads its node's clock
# every 500 ms): loadgen's standard scenarios, redlock and rslock, that commit's tree (A) against the
# same tree with b4489b8 reverted (B), alternating, RUNS pairs.
#   A=/tmp/loadgen-A B=/tmp/loadgen-B scripts/with-redis results/2026-12-01/jump-log/run.sh
# A: release loadgen of 2068f91; B: 2068f91 with `git revert b4489b8` (conflict in
# src/transport/pipeline/mod.rs resolved by keeping `time_refused`, dropping `last_sample`).
set -euo pipefail
cd "$(dirname "$0")"
RUNS=${RUNS:-3}
for i in $(seq 1 "$RUNS"); do
  for side in A B; do
    bin=$([[ $side == A ]] && echo "$A" || echo "$B")
    echo "== $side $i, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    "$bin" --engine redlock,rslock --quiet --json "$side-$i.json" > "$side-$i.txt"
  done
done
