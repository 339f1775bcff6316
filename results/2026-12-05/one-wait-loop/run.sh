#!/usr/bin/env bash
# One wait loop (every kind's wait through Core::wait_for and a Waiter): BEFORE = 5d502cd's loadgen,
# AFTER = f0ea7fe's, ROUNDS alternating rounds (scripts/ab-rounds --abba), hold 0, 64 workers on 4
# keys, `--duration 5s`, on 5 nodes loadgen starts itself: the exclusive lock in 16 processes x 4 and
# 4 x 16 (redlock and rslock), the fair lock in 4 x 16 and 16 x 4 (redlock).
#   BEFORE=<5d502cd's loadgen> AFTER=<f0ea7fe's loadgen> ROUNDS=3 scripts/with-redis results/2026-12-05/one-wait-loop/run.sh
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
ab="$(dirname "$0")/../../../scripts/ab-rounds"
"$ab" --build before="$BEFORE" --build after="$AFTER" --rounds "${ROUNDS:-3}" --first "${FIRST:-1}" --abba \
  --out "$out" --label wait-loop \
  --step 'p16-{build}-{round}' --engine redlock,rslock --processes 16 --concurrency 64 --keys 4 --duration 5s \
  --step 'p4-{build}-{round}' --engine redlock,rslock --processes 4 --concurrency 64 --keys 4 --duration 5s \
  --step 'fair-p4-{build}-{round}' --engine redlock --lock fair --processes 4 --concurrency 64 --keys 4 --duration 5s \
  --step 'fair-p16-{build}-{round}' --engine redlock --lock fair --processes 16 --concurrency 64 --keys 4 --duration 5s
