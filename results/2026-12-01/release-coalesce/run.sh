#!/usr/bin/env bash
# Coalesced releases: loadgen's standard scenarios, redlock, rslock and the
# redis-benchmark ceiling, release loadgen of the parent (A, ef97f01) against the change (B),
# alternating, RUNS pairs.
#   A=/tmp/loadgen-A B=/tmp/loadgen-B scripts/with-redis results/2026-12-01/release-coalesce/run.sh
#   python3 results/2026-12-01/release-coalesce/summarize.py
# OUT=dir writes the runs there instead (results/2026-12-01/time-per-write/: B = e5a90a0, the
# coalesced releases, against C = e12a0ae, one clock-guard TIME per write).
set -euo pipefail
ab="$(cd "$(dirname "$0")/../../../scripts" && pwd)/ab-rounds"
cd "${OUT:-$(dirname "$0")}"
# The alternating pairs are scripts/ab-rounds' (see there).
"$ab" --build A="$A" --build B="$B" --rounds "${RUNS:-3}" \
  --step '{build}-{round}' --engine redlock,rslock,ceiling --quiet
