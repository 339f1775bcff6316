#!/usr/bin/env bash
# The standard scenarios (a), (b), (c) before and after inspect's parts moved into the kinds, the
# duplicate clean-up (shared wait shorthands, one fan_out_into, node_now!) and the rest of this
# session's changes: BEFORE = c639b50's loadgen, AFTER = this commit's, ROUNDS alternating rounds
# (scripts/ab-rounds --abba), each `loadgen --engine redlock --scenario standard --duration 5s` on 5 nodes
# loadgen starts itself.
#   BEFORE=<c639b50's loadgen> AFTER=<this build's loadgen> ROUNDS=4 scripts/with-redis results/2026-12-05/kinds-inspect/run.sh
# Build each with: cargo build --release -p loadgen (copy target/release/loadgen aside per build).
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
ab="$(dirname "$0")/../../../scripts/ab-rounds"
"$ab" --build before="$BEFORE" --build after="$AFTER" --rounds "${ROUNDS:-4}" --first "${FIRST:-1}" --abba \
  --out "$out" --label standard --step 'std-{build}-{round}' --engine redlock --scenario standard --duration 5s
