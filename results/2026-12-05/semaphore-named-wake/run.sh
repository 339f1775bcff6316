#!/usr/bin/env bash
# The counting semaphore's waiters woken by name (one per release): BEFORE = f0ea7fe's loadgen (they
# sleep their retry pause), AFTER = this commit's, ROUNDS alternating rounds (--abba), 2 permits per
# key, 64 workers on 4 keys in 4 x 16 and 16 x 4, hold 0, `--duration 5s`, 5 nodes loadgen starts.
#   BEFORE=<f0ea7fe's loadgen> AFTER=<this build's loadgen> ROUNDS=3 scripts/with-redis results/2026-12-05/semaphore-named-wake/run.sh
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
ab="$(dirname "$0")/../../../scripts/ab-rounds"
"$ab" --build before="$BEFORE" --build after="$AFTER" --rounds "${ROUNDS:-3}" --first "${FIRST:-1}" --abba \
  --out "$out" --label permits \
  --step 'p4-{build}-{round}' --engine redlock --lock permits:2 --processes 4 --concurrency 64 --keys 4 --duration 5s \
  --step 'p16-{build}-{round}' --engine redlock --lock permits:2 --processes 16 --concurrency 64 --keys 4 --duration 5s
