#!/usr/bin/env bash
# Coalesced releases (issue 19, item 3): loadgen's standard scenarios, redlock, rslock and the
# redis-benchmark ceiling, release loadgen of the parent (A, ef97f01) against the change (B),
# alternating, RUNS pairs.
#   A=/tmp/loadgen-A B=/tmp/loadgen-B scripts/with-redis results/2026-12-01/release-coalesce/run.sh
#   python3 results/2026-12-01/release-coalesce/summarize.py
# OUT=dir writes the runs there instead (results/2026-12-01/time-per-write/: B = e5a90a0, the
# coalesced releases, against C = e12a0ae, one clock-guard TIME per write).
set -euo pipefail
cd "${OUT:-$(dirname "$0")}"
RUNS=${RUNS:-3}
for i in $(seq 1 "$RUNS"); do
  for side in A B; do
    bin=$([[ $side == A ]] && echo "$A" || echo "$B")
    echo "== $side $i, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    "$bin" --engine redlock,rslock,ceiling --quiet --json "$side-$i.json" > "$side-$i.txt"
  done
done
