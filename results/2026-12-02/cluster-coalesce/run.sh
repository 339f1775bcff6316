#!/usr/bin/env bash
# Issue 28, cross-slot coalescing on cluster shards: build A (the parent) against build B (the
# change), alternating. Starts SETS (default 3) local 3-master clusters (3 x SETS redis-servers, no
# replicas) and SETS standalone masters on loopback ports from $BASE (default 7400) once, then RUNS
# rounds of
#   C-A, C-B: loadgen on the three clusters (`redis-cluster://` node sets); B also runs redlock-fred
#   S-A, S-B: loadgen on the three standalone masters (the standalone path must not regress)
# each `--scenario standard` ((a) 1 worker, (b) 64 workers on distinct keys, (c) 64 workers on 4 keys).
#   A=/tmp/bin/loadgen-base B=/tmp/bin/loadgen-xslot RUNS=3 SETS=3 OUT=dir \
#     scripts/with-redis results/2026-12-02/cluster-coalesce/run.sh
#   python3 results/2026-12-02/cluster-coalesce/summarize.py [dir]
set -euo pipefail
out="${OUT:-$(cd "$(dirname "$0")" && pwd)}"
RUNS=${RUNS:-3}
SETS=${SETS:-3}   # node sets: SETS clusters of 3 masters against SETS standalone masters
sets=$(seq 0 $((SETS - 1)))
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
for c in $sets; do for m in 0 1 2; do start $((BASE + c * 10 + m)) cluster; done; done
for s in $sets; do start $((BASE + 100 + s)); done
sleep 1
clusters=()
for c in $sets; do
  p=$((BASE + c * 10))
  redis-cli --cluster create 127.0.0.1:$p 127.0.0.1:$((p + 1)) 127.0.0.1:$((p + 2)) --cluster-yes > "$work/create-$c" 2>&1
  clusters+=("redis-cluster://127.0.0.1:$p?node=127.0.0.1:$((p + 1))&node=127.0.0.1:$((p + 2))")
done
for c in $sets; do
  p=$((BASE + c * 10))
  until redis-cli -p $p cluster info | grep -q cluster_state:ok; do sleep 0.2; done
done
standalone=$(for s in $sets; do printf "redis://127.0.0.1:%d," $((BASE + 100 + s)); done); standalone=${standalone%,}
cnodes=$(IFS=,; echo "${clusters[*]}")
for i in $(seq 1 "$RUNS"); do
  for run in C-A C-B S-A S-B; do
    echo "== $run $i, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    exe=$A engines=redlock nodes=$cnodes
    [[ $run == *-B ]] && exe=$B
    [[ $run == C-B ]] && engines=redlock,redlock-fred
    [[ $run == S-* ]] && nodes=$standalone
    "$exe" --nodes "$nodes" --engine "$engines" --quiet --json "$out/$run-$i.json" > "$out/$run-$i.txt"
  done
done
