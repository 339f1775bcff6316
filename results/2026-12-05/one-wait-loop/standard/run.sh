#!/usr/bin/env bash
# The standard scenarios (a), (b), (c) with the one wait loop: BEFORE = 5d502cd's loadgen, AFTER =
# f0ea7fe's, ROUNDS alternating rounds (--abba), redlock only, `--duration 5s`, on 5 nodes loadgen
# starts itself.
#   BEFORE=<5d502cd's loadgen> AFTER=<f0ea7fe's loadgen> ROUNDS=4 scripts/with-redis results/2026-12-05/one-wait-loop/standard/run.sh
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
ab="$(dirname "$0")/../../../../scripts/ab-rounds"
"$ab" --build before="$BEFORE" --build after="$AFTER" --rounds "${ROUNDS:-4}" --first "${FIRST:-1}" --abba \
  --out "$out" --label standard --step 'std-{build}-{round}' --engine redlock --scenario standard --duration 5s
