#!/usr/bin/env bash
# Cost of the fair lock's enqueue refusal (73111a5): loadgen's fair-lock scenario (64 workers on 4
# keys in 4 processes), release loadgen of c6e0b39 (A: head-only wake-ups, no refusal) against
# d7c99c2 (B: with the refusal), alternating, RUNS pairs.
#   A=/tmp/loadgen-M B=/tmp/loadgen-F scripts/with-redis results/2026-12-01/fair-refusal/run.sh
set -euo pipefail
ab="$(cd "$(dirname "$0")/../../../scripts" && pwd)/ab-rounds"
cd "$(dirname "$0")"
# The alternating pairs are scripts/ab-rounds' (see there).
"$ab" --build A="$A" --build B="$B" --rounds "${RUNS:-3}" \
  --step '{build}-{round}' --engine redlock --concurrency 64 --keys 4 --processes 4 --lock fair --quiet
