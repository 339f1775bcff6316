#!/usr/bin/env bash
# The per-engine registry of live locks (for Redlock::shutdown) and the per-engine gauges, against
# 3b8546e (before both): every grant registers its release in a sharded map, every drop removes it.
# Two builds alternate, ROUNDS rounds (default 3), each
# `loadgen --engine redlock --scenario standard --duration 5s` ((a) 1 worker, (b) 64 workers on
# distinct keys, (c) 64 workers on 4 keys; 5 nodes loadgen starts itself).
#   BEFORE=<3b8546e's loadgen> AFTER=<this build's loadgen> ROUNDS=3 scripts/with-redis results/2026-12-04/live-locks/run.sh
# Build each with: cargo build --release -p loadgen (copy target/release/loadgen aside per build).
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
# The alternating rounds are scripts/ab-rounds' (see there).
"$(dirname "$0")/../../../scripts/ab-rounds" --build before="$BEFORE" --build after="$AFTER" \
  --rounds "${ROUNDS:-3}" --out "$out" \
  --step 'std-{build}-{round}' --engine redlock --scenario standard --duration 5s
