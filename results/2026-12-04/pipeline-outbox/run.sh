#!/usr/bin/env bash
# The pipelined connection's writer after the outbox change (unwritten bytes kept where a thread
# without the runtime can write them; plain TCP written with try_write as far as the socket takes
# it), against its parent 36ac7c0. Two builds alternate, ROUNDS rounds (default 3), each
# `loadgen --engine redlock --scenario standard --duration 5s` ((a) 1 worker, (b) 64 workers on
# distinct keys, (c) 64 workers on 4 keys; 5 nodes loadgen starts itself).
#   BEFORE=<36ac7c0's loadgen> AFTER=<this build's loadgen> ROUNDS=3 scripts/with-redis results/2026-12-04/pipeline-outbox/run.sh
# Build each with: cargo build --release -p loadgen (copy target/release/loadgen aside per build).
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
# The alternating rounds are scripts/ab-rounds' (see there).
"$(dirname "$0")/../../../scripts/ab-rounds" --build before="$BEFORE" --build after="$AFTER" \
  --rounds "${ROUNDS:-3}" --out "$out" \
  --step 'std-{build}-{round}' --engine redlock --scenario standard --duration 5s
