#!/usr/bin/env bash
# A connection that died in silence is noticed (a look per connection a second, a subscriber PING
# when quiet): BEFORE = 801499a's loadgen, AFTER = ae55767's, ROUNDS alternating rounds
# (scripts/ab-rounds --abba), hold 0, `--duration 5s`, on 5 nodes loadgen starts itself: one process
# x 64 workers on 1,000 keys (uncontended), and 16 processes x 4 on 4 keys (redlock and rslock).
#   BEFORE=<801499a's loadgen> AFTER=<ae55767's loadgen> ROUNDS=3 scripts/with-redis results/2026-12-05/silent-death/run.sh
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
ab="$(dirname "$0")/../../../scripts/ab-rounds"
"$ab" --build before="$BEFORE" --build after="$AFTER" --rounds "${ROUNDS:-3}" --abba \
  --out "$out" --label silent-death \
  --step 'free-{build}-{round}' --engine redlock --concurrency 64 --keys 1000 --duration 5s \
  --step 'p16-{build}-{round}' --engine redlock,rslock --processes 16 --concurrency 64 --keys 4 --duration 5s
