#!/usr/bin/env bash
# The slow-network row: every node behind a proxy adding 20-40 ms each way (RTT 40-80 ms), TTL 200 ms,
# 16 contending workers on one key in 4 processes, redlock and rslock in the same run, default node deadline.
#   results/2026-12-01/slow-network/run.sh [RUN_LABEL]     (LOADGEN=path/to/loadgen for another build)
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=results/2026-12-01/slow-network
LABEL=${1:-1}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
ports=()
for i in 1 2 3 4 5; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no >/dev/null &
  pids+=($!); ports+=("$port")
done
sleep 0.5
scripts/delay-proxy.py --delay-ms 20:40 --seconds 120 "${ports[@]}" > "$OUT/proxy-$LABEL.txt" &
pids+=($!)
sleep 1
urls=$(awk '{print "redis://"$3}' "$OUT/proxy-$LABEL.txt" | paste -sd, -)
${LOADGEN:-target/release/loadgen} --nodes "$urls" --engine redlock,rslock --concurrency 16 --keys 1 --ttl 200ms \
  --processes 4 --duration 12s --json "$OUT/slow-$LABEL.json" | tee "$OUT/slow-$LABEL.txt"
