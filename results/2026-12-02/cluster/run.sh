#!/usr/bin/env bash
# Issue 28: Redis Cluster node sets on the engine's pipelined transport against fred, and against
# standalone masters. Starts three local 3-master clusters (9 redis-servers, no replicas) and three
# standalone masters on loopback ports from $BASE (default 7400), then alternates, RUNS times:
#   C: loadgen on the three clusters (`redis-cluster://` node sets), engines redlock and redlock-fred
#   S: loadgen on the three standalone masters, engine redlock
# each `--scenario standard` ((a) 1 worker, (b) 64 workers on distinct keys, (c) 64 workers on 4 keys).
#   CARGO_TARGET_DIR=/tmp/ab-target cargo build --release -p loadgen
#   LOADGEN=/tmp/ab-target/release/loadgen RUNS=3 scripts/with-redis results/2026-12-02/cluster/run.sh
#   python3 results/2026-12-02/cluster/summarize.py
set -euo pipefail
cd "$(dirname "$0")"
RUNS=${RUNS:-3}
BASE=${BASE:-7400}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
start() { # port [cluster]
  local port=$1; mkdir -p "$work/$port"
  local extra=()
  [[ ${2:-} == cluster ]] && extra=(--cluster-enabled yes --cluster-config-file "$work/$port/nodes.conf" --cluster-node-timeout 5000)
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work/$port" "${extra[@]}" \
    > "$work/$port/log" 2>&1 &
  pids+=($!)
}
for c in 0 1 2; do for m in 0 1 2; do start $((BASE + c * 10 + m)) cluster; done; done
for s in 0 1 2; do start $((BASE + 100 + s)); done
sleep 1
clusters=()
for c in 0 1 2; do
  p=$((BASE + c * 10))
  redis-cli --cluster create 127.0.0.1:$p 127.0.0.1:$((p + 1)) 127.0.0.1:$((p + 2)) --cluster-yes > "$work/create-$c" 2>&1
  clusters+=("redis-cluster://127.0.0.1:$p?node=127.0.0.1:$((p + 1))&node=127.0.0.1:$((p + 2))")
done
for c in 0 1 2; do
  p=$((BASE + c * 10))
  until redis-cli -p $p cluster info | grep -q cluster_state:ok; do sleep 0.2; done
done
standalone="redis://127.0.0.1:$((BASE + 100)),redis://127.0.0.1:$((BASE + 101)),redis://127.0.0.1:$((BASE + 102))"
cnodes=$(IFS=,; echo "${clusters[*]}")
for i in $(seq 1 "$RUNS"); do
  for side in C S; do
    echo "== $side $i, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    if [[ $side == C ]]; then
      "$LOADGEN" --nodes "$cnodes" --engine redlock,redlock-fred --quiet --json "C-$i.json" > "C-$i.txt"
    else
      "$LOADGEN" --nodes "$standalone" --engine redlock --quiet --json "S-$i.json" > "S-$i.txt"
    fi
  done
done
