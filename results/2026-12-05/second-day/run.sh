#!/usr/bin/env bash
# This session's whole change (hand-off trim, the default wait, lost/is_held, busy errors, fencing,
# one way in: loadgen now takes its locks through the request) against the session's parent
# (f2c59ee), the standard scenarios: two builds alternate, ROUNDS rounds (default 3; 5 here), each
# `loadgen --engine redlock --scenario standard --duration 5s` ((a) 1 worker, (b) 64 workers on
# distinct keys, (c) 64 workers on 4 keys; 5 nodes loadgen starts itself).
#   BEFORE=<f2c59ee's loadgen> AFTER=<this build's loadgen> ROUNDS=5 scripts/with-redis results/2026-12-05/second-day/run.sh
# Build each with: cargo build --release -p loadgen (copy target/release/loadgen aside per build).
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
# The alternating rounds are scripts/ab-rounds' (see there).
"$(dirname "$0")/../../../scripts/ab-rounds" --build before="$BEFORE" --build after="$AFTER" \
  --rounds "${ROUNDS:-3}" --out "$out" \
  --step 'std-{build}-{round}' --engine redlock --scenario standard --duration 5s
