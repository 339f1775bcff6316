#!/usr/bin/env bash
# A queued fair waiter that listens pauses for the keepalive (a quarter TTL), not the retry pause:
# BEFORE = acea141's loadgen, AFTER = this change's, ROUNDS alternating rounds (scripts/ab-rounds
# --abba), hold 0, on 5 nodes loadgen starts itself: the fair lock with 64 workers on 4 keys in
# 1 x 64, 4 x 16 and 16 x 4, and past capacity with 6,400 workers on 4 keys in 1 and 4 processes.
#   BEFORE=<acea141's loadgen> AFTER=<this change's loadgen> ROUNDS=3 scripts/with-redis results/2026-12-05/fair-keepalive/run.sh
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
ab="$(dirname "$0")/../../../scripts/ab-rounds"
"$ab" --build before="$BEFORE" --build after="$AFTER" --rounds "${ROUNDS:-3}" --first "${FIRST:-1}" --abba \
  --out "$out" --label fair-keepalive \
  --step 'fair-p1-{build}-{round}' --engine redlock --lock fair --processes 1 --concurrency 64 --keys 4 --duration 5s \
  --step 'fair-p4-{build}-{round}' --engine redlock --lock fair --processes 4 --concurrency 64 --keys 4 --duration 5s \
  --step 'fair-p16-{build}-{round}' --engine redlock --lock fair --processes 16 --concurrency 64 --keys 4 --duration 5s \
  --step 'fair6400-p1-{build}-{round}' --engine redlock --lock fair --processes 1 --concurrency 6400 --keys 4 --duration 5s \
  --step 'fair6400-p4-{build}-{round}' --engine redlock --lock fair --processes 4 --concurrency 6400 --keys 4 --duration 5s
