#!/usr/bin/env bash
# Held renewals on 5 spawned Valkey 9.1.2 nodes, native commands (N: one SET ... IFEQ ... GET
# PX per lock, pipelined) against the same build forced to the scripts (S, LOADGEN_SCRIPTS_ONLY=1:
# EXTEND_MANY, 32 locks per call), alternating, RUNS pairs:
#   CARGO_TARGET_DIR=/tmp/ab-target cargo build --release -p loadgen
#   LOADGEN=/tmp/ab-target/release/loadgen RUNS=2 \
#     scripts/with-server valkey results/2026-12-02/native-held/run.sh
#   python3 results/2026-12-01/overload/summarize.py results/2026-12-02/native-held N
#   python3 results/2026-12-01/overload/summarize.py results/2026-12-02/native-held S
set -euo pipefail
cd "$(dirname "$0")"
RUNS=${RUNS:-2}
. ../../lib/native-sides.sh
native_sides "$RUNS" held- --engine redlock --scenario held --held 10k,100k --hold-for 20s --held-ttl 3s \
  --renew-every 1s
