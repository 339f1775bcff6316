#!/usr/bin/env bash
# The reworked cross-process hand-off, on by default, against its parent. Two builds
# alternate, ROUNDS rounds (default 3), each round: `loadgen --scenario contention` (64 workers on
# 4 keys in 1 process, 4 x 16 and 16 x 4, plain and fair lock, rslock beside the plain lock) and
# `loadgen --engine redlock --scenario standard` ((a), (b), (c): the no-regression check).
#   BEFORE=<parent's loadgen> AFTER=<this build's loadgen> ROUNDS=3 scripts/with-redis results/2026-12-02/handoff/run.sh
#   python3 results/2026-12-02/handoff/summarize.py [dir]
# Build each with: cargo build --release -p loadgen (copy target/release/loadgen aside per build).
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
# The alternating rounds are scripts/ab-rounds' (see there): a build runs both steps in its turn.
"$(dirname "$0")/../../../scripts/ab-rounds" --build before="$BEFORE" --build after="$AFTER" \
  --rounds "${ROUNDS:-3}" --out "$out" \
  --step 'contention-{build}-{round}' --scenario contention \
  --step 'std-{build}-{round}' --engine redlock --scenario standard --duration 5s
