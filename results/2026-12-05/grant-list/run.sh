#!/usr/bin/env bash
# A take-over wait forgets its channel's earlier grants before its value is first sent (so late
# grants of earlier values never fill the channel's list, whose overflow dropped the current
# value's too): BEFORE = 9888719's loadgen, AFTER = this commit's, ROUNDS alternating rounds
# (scripts/ab-rounds --abba), each the exclusive lock, hold 0, 64 workers on 4 keys in 16 processes x 4
# and 4 x 16, `--duration 5s`, on 5 nodes loadgen starts itself.
#   BEFORE=<9888719's loadgen> AFTER=<this build's loadgen> ROUNDS=3 scripts/with-redis results/2026-12-05/grant-list/run.sh
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
ab="$(dirname "$0")/../../../scripts/ab-rounds"
"$ab" --build before="$BEFORE" --build after="$AFTER" --rounds "${ROUNDS:-3}" --first "${FIRST:-1}" --abba \
  --out "$out" --label contention \
  --step 'p16-{build}-{round}' --engine redlock,rslock --processes 16 --concurrency 64 --keys 4 --duration 5s \
  --step 'p4-{build}-{round}' --engine redlock,rslock --processes 4 --concurrency 64 --keys 4 --duration 5s
