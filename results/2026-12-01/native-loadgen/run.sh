#!/usr/bin/env bash
# The native-command loadgen run: the standard scenarios on 5 spawned Valkey 9.1.2 nodes, redlock with
# native commands (N) against the same build forced to the scripts (S, LOADGEN_SCRIPTS_ONLY=1), and
# the redis-benchmark ceiling on the same nodes (SET NX PX + EVALSHA release), alternating, RUNS pairs.
#   LOADGEN=target/release/loadgen scripts/with-server valkey results/2026-12-01/native-loadgen/run.sh
#   python3 results/2026-12-01/native-loadgen/summarize.py
set -euo pipefail
cd "$(dirname "$0")"
RUNS=${RUNS:-3}
. ../../lib/native-sides.sh
native_sides "$RUNS" "" --engine redlock,ceiling
