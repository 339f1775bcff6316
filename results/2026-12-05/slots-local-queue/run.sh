#!/usr/bin/env bash
# A slot semaphore's pass that finds every slot held by tasks of its own process waits in one
# slot's local queue instead of polling: BEFORE = 0bcb2f6's loadgen, AFTER = this change's, ROUNDS
# alternating rounds (scripts/ab-rounds --abba), hold 0, 5 nodes loadgen starts itself: 4 slots
# on each of 4 keys, 64 workers in 1 and 4 processes, and past capacity 6,400 workers in 1.
#   BEFORE=<0bcb2f6's loadgen> AFTER=<this change's loadgen> ROUNDS=3 scripts/with-redis results/2026-12-05/slots-local-queue/run.sh
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
ab="$(dirname "$0")/../../../scripts/ab-rounds"
"$ab" --build before="$BEFORE" --build after="$AFTER" --rounds "${ROUNDS:-3}" --first "${FIRST:-1}" --abba \
  --out "$out" --label slots-local-queue \
  --step 'slots-p1-{build}-{round}' --engine redlock --lock slots:4 --processes 1 --concurrency 64 --keys 4 --duration 5s \
  --step 'slots-p4-{build}-{round}' --engine redlock --lock slots:4 --processes 4 --concurrency 64 --keys 4 --duration 5s \
  --step 'slots6400-p1-{build}-{round}' --engine redlock --lock slots:4 --processes 1 --concurrency 6400 --keys 4 --duration 5s
