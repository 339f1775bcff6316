#!/usr/bin/env bash
# The fair lock granted by messages: BEFORE = 98e54e5's loadgen (live keys), AFTER = this change's,
# ROUNDS alternating rounds (scripts/ab-rounds --abba), hold 0,
# 64 workers on 4 keys, `--duration 5s`, on 5 nodes loadgen starts itself: the fair lock in
# 1 x 64, 4 x 16 and 16 x 4 (redlock), and the exclusive lock in 4 x 16 beside it (same run).
#   BEFORE=<98e54e5's loadgen> AFTER=<this change's loadgen> ROUNDS=3 scripts/with-redis results/2026-12-05/fair-grant-by-message/run.sh
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
ab="$(dirname "$0")/../../../scripts/ab-rounds"
"$ab" --build before="$BEFORE" --build after="$AFTER" --rounds "${ROUNDS:-3}" --first "${FIRST:-1}" --abba \
  --out "$out" --label fair-grant-by-message \
  --step 'fair-p1-{build}-{round}' --engine redlock --lock fair --processes 1 --concurrency 64 --keys 4 --duration 5s \
  --step 'fair-p4-{build}-{round}' --engine redlock --lock fair --processes 4 --concurrency 64 --keys 4 --duration 5s \
  --step 'fair-p16-{build}-{round}' --engine redlock --lock fair --processes 16 --concurrency 64 --keys 4 --duration 5s \
  --step 'excl-p4-{build}-{round}' --engine redlock --processes 4 --concurrency 64 --keys 4 --duration 5s
