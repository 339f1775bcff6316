#!/usr/bin/env bash
# The fair lock's release to its engine's next waiter and the hand-off's places by call start, against ffe8d1c. Two builds
# alternate, ROUNDS rounds (default 3), each round: `loadgen --scenario contention` (64 workers on
# 4 keys in 1 process, 4 x 16 and 16 x 4, plain and fair lock, rslock beside the plain lock) and
# `loadgen --engine redlock --scenario standard` ((a), (b), (c): the no-regression check).
#   BEFORE=<parent's loadgen> AFTER=<this build's loadgen> ROUNDS=3 scripts/with-redis results/2026-12-03/fair-successor/run.sh
#   python3 results/2026-12-03/fair-successor/summarize.py [dir]
# Build each with: cargo build --release -p loadgen (copy target/release/loadgen aside per build).
set -euo pipefail
# The same rounds as results/2026-12-02/handoff/run.sh (each build: contention, then the standard
# scenarios), written into this directory unless OUT names another.
OUT="${OUT:-$(cd "$(dirname "$0")" && pwd)}" exec "$(dirname "$0")/../../2026-12-02/handoff/run.sh"
