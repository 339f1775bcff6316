#!/usr/bin/env bash
# Cost of b4489b8 (a plain Lock checks the clock-jump log; an idle connection reads its node's clock
# every 500 ms): loadgen's standard scenarios, redlock and rslock, that commit's tree (A) against the
# same tree with b4489b8 reverted (B), alternating, RUNS pairs.
#   A=/tmp/loadgen-A B=/tmp/loadgen-B scripts/with-redis results/2026-12-01/jump-log/run.sh
# A: release loadgen of 2068f91; B: 2068f91 with `git revert b4489b8` (conflict in
# src/transport/pipeline/mod.rs resolved by keeping `time_refused`, dropping `last_sample`).
set -euo pipefail
ab="$(cd "$(dirname "$0")/../../../scripts" && pwd)/ab-rounds"
cd "$(dirname "$0")"
# The alternating pairs are scripts/ab-rounds' (see there).
"$ab" --build A="$A" --build B="$B" --rounds "${RUNS:-3}" \
  --step '{build}-{round}' --engine redlock,rslock --quiet
