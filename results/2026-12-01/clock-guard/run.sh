#!/usr/bin/env bash
# Cost of the clock-jump guard (one TIME per node before each acquire): loadgen's standard scenarios
# with redlock and rslock, the guard on (the default) and off, alternating, RUNS pairs.
#   ON=/tmp/loadgen-guard-on OFF=/tmp/loadgen-guard-off results/2026-12-01/clock-guard/run.sh
# ON: the release loadgen of the commit under test; OFF: the same tree with `clock_guard: false` as the
# default in src/config.rs (the only difference).
set -euo pipefail
ab="$(cd "$(dirname "$0")/../../../scripts" && pwd)/ab-rounds"
cd "$(dirname "$0")"
# The alternating pairs are scripts/ab-rounds' (see there).
"$ab" --build on="$ON" --build off="$OFF" --rounds "${RUNS:-3}" \
  --step '{build}-{round}' --engine redlock,rslock
