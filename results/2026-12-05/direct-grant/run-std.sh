#!/usr/bin/env bash
# The standard scenarios only, both builds in ABBA order (the first build of a round alternates), so
# neither build always runs second: `loadgen --engine redlock --scenario standard --duration 5s`.
#   BEFORE=<parent's loadgen> AFTER=<this build's loadgen> ROUNDS=4 FIRST=5 scripts/with-redis results/2026-12-05/direct-grant/run-std.sh
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
# The alternating rounds are scripts/ab-rounds' (see there); --abba is the order above.
"$(dirname "$0")/../../../scripts/ab-rounds" --build before="$BEFORE" --build after="$AFTER" \
  --rounds "${ROUNDS:-4}" --first "${FIRST:-5}" --abba --out "$out" \
  --label standard --step 'std-{build}-{round}' --engine redlock --scenario standard --duration 5s
