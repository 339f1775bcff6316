#!/usr/bin/env bash
# The election benchmark, twice: `loadgen --scenario election` on 5 redis-server nodes it starts itself
# (50 failover trials at TTL 1 s with 2 observers, then 10 s each of idle nodes, 1,000 renewed locks and
# 1,000 elections). Build first: cargo build --release -p loadgen. Run from the repository root:
#   scripts/with-redis results/2026-12-05/election/run.sh            (RUNS="3 4" for the runs after the change)
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
exe="${LOADGEN:-$(pwd)/target/release/loadgen}"
for n in ${RUNS:-1 2}; do
  (cd "$out" && "$exe" --scenario election --trials 50 --election-ttl 1s --observers 2 --elections 1000 \
    --json "run-$n.json" > "run-$n.txt" 2> "run-$n.err")
done
