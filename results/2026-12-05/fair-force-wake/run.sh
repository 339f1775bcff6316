#!/usr/bin/env bash
# The fair lock's forced-release wake, and the hot path: BEFORE has no such wake, AFTER wakes the
# queue's first live waiter by name from the forced-release script (fair waiters keep one channel). BEFORE = ae55767's loadgen, AFTER = bfa1c6c's, ROUNDS
# alternating rounds (scripts/ab-rounds --abba), hold 0, 64 workers on 4 keys, `--duration 5s`, on 5
# nodes loadgen starts itself, the fair lock in 1 x 64, 4 x 16 and 16 x 4 processes x workers.
#   BEFORE=<ae55767's loadgen> AFTER=<bfa1c6c's loadgen> ROUNDS=3 scripts/with-redis results/2026-12-05/fair-force-wake/run.sh
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
ab="$(dirname "$0")/../../../scripts/ab-rounds"
"$ab" --build before="$BEFORE" --build after="$AFTER" --rounds "${ROUNDS:-3}" --abba \
  --out "$out" --label fair-force-wake \
  --step 'fair-p1-{build}-{round}' --engine redlock --lock fair --processes 1 --concurrency 64 --keys 4 --duration 5s \
  --step 'fair-p4-{build}-{round}' --engine redlock --lock fair --processes 4 --concurrency 64 --keys 4 --duration 5s \
  --step 'fair-p16-{build}-{round}' --engine redlock --lock fair --processes 16 --concurrency 64 --keys 4 --duration 5s
