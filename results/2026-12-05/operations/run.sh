#!/usr/bin/env bash
# This session's change (rooms by concept, operations named, one render per dialect, no circle of files,
# one parser and one spawner, memory nodes, leader election) against the session's parent
# (98c0270), the standard scenarios: two builds alternate in ABBA order (odd rounds before then after,
# even rounds after then before, so a drift in the machine's load hits both alike), ROUNDS rounds
# (default 6), each `loadgen --engine redlock --scenario standard --duration 5s` ((a) 1 worker,
# (b) 64 workers on distinct keys, (c) 64 workers on 4 keys; 5 nodes loadgen starts itself).
#   BEFORE=<98c0270's loadgen> AFTER=<HEAD's loadgen> scripts/with-redis results/2026-12-05/operations/run.sh
# Build each with: cargo build --release -p loadgen (copy target/release/loadgen aside per build),
# then: python3 results/2026-12-05/operations/summarize.py
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
# The alternating rounds are scripts/ab-rounds' (see there); --abba is the order above.
"$(dirname "$0")/../../../scripts/ab-rounds" --build before="$BEFORE" --build after="$AFTER" \
  --rounds "${ROUNDS:-6}" --abba --out "$out" \
  --step 'std-{build}-{round}' --engine redlock --scenario standard --duration 5s
