#!/usr/bin/env bash
# Runs scenarios 16 and 17 (full and --short) several times and the whole --short suite once, with the
# load average before and after each run. Output: one file per run in out/ next to this script.
# Usage (from the repository root): results/2026-12-01/chaos-16-17/run.sh [full-runs] [short-runs]
set -euo pipefail
full=${1:-3}
short=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
out="$here/out"
mkdir -p "$out"
scripts/with-redis cargo build --release -p chaos
bin=target/release/chaos
run() {
  local name=$1; shift
  {
    echo "# commit $(git rev-parse --short HEAD); command: $bin $*"
    echo "# before: $(uptime)"
    local t0; t0=$(date +%s.%N)
    set +e; scripts/with-redis "$bin" "$@"; local rc=$?; set -e
    echo "# exit $rc, wall $(echo "$(date +%s.%N) - $t0" | bc) s"
    echo "# after: $(uptime)"
  } > "$out/$name.txt" 2>&1
  grep -E '^(  ok|  FAIL|  skip|chaos:)|^# (exit|before|after)' "$out/$name.txt"
}
for i in $(seq 1 "$full"); do run "full-$i" --scenario 16,17; done
for i in $(seq 1 "$short"); do run "short-$i" --short --scenario 16,17; done
run short-suite --short
