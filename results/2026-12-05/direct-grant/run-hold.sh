#!/usr/bin/env bash
# Hold 1 ms: 64 workers on 4 keys in 1, 4 and 16 processes, both builds alternating (ABBA by round):
# `loadgen --engine redlock --concurrency 64 --keys 4 --hold 1ms --processes P --duration 5s`.
#   BEFORE=<parent's loadgen> AFTER=<this build's loadgen> ROUNDS=2 scripts/with-redis results/2026-12-05/direct-grant/run-hold.sh
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
# A round runs each process count with both builds before the next count, so each count's pair is
# one round of scripts/ab-rounds, numbered by this round (its number gives the ABBA order).
for r in $(seq 1 "${ROUNDS:-2}"); do
  for p in 1 4 16; do
    "$(dirname "$0")/../../../scripts/ab-rounds" --build before="$BEFORE" --build after="$AFTER" \
      --rounds 1 --first "$r" --abba --out "$out" --label "hold 1ms x$p" --step "hold-{build}-p$p-{round}" \
      --engine redlock --concurrency 64 --keys 4 --hold 1ms --processes "$p" --duration 5s
  done
done
