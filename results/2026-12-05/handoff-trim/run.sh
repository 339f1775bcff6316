#!/usr/bin/env bash
# The hand-off trimmed (a lost round not released where a node answered taken; a reserved take-over
# removes no name; a recently contended resource starts as a take-over) against its parent:
# two builds alternate, ROUNDS rounds (default 2), each
# `loadgen --scenario contention --duration 5s` (64 workers on 4 keys in 1 x 64, 4 x 16 and 16 x 4
# processes, the exclusive and the fair lock, rslock beside the exclusive lock; 5 nodes loadgen
# starts itself), then `--scenario standard --duration 5s` for (a), (b), (c).
#   BEFORE=<parent's loadgen> AFTER=<this build's loadgen> ROUNDS=2 scripts/with-redis results/2026-12-05/handoff-trim/run.sh
# Build each with: cargo build --release -p loadgen (copy target/release/loadgen aside per build).
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
ab="$(dirname "$0")/../../../scripts/ab-rounds"
# Two series of alternating rounds (scripts/ab-rounds): every round of the contention scenario, then
# every round of the standard scenarios.
"$ab" --build before="$BEFORE" --build after="$AFTER" --rounds "${ROUNDS:-2}" --out "$out" \
  --label contention --step 'cont-{build}-{round}' --scenario contention --duration 5s
"$ab" --build before="$BEFORE" --build after="$AFTER" --rounds "${ROUNDS:-2}" --out "$out" \
  --label standard --step 'std-{build}-{round}' --engine redlock --scenario standard --duration 5s
