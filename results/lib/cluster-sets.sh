# What the dated results/<date>/<topic>/run.sh scripts on Redis Cluster node sets share: starting local
# 3-master clusters beside standalone masters, one way, so that their runs compare. A run.sh sources it
# by its path from the script's own directory:
#
#   . "$(dirname "$0")/../../lib/cluster-sets.sh"
#   start_sets 3    # sets $cnodes and $standalone
#
# redis-servers listen on loopback ports from $BASE (default 7400), keep their files in a temp
# directory, and are stopped (the directory removed) when the script exits.
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
# start_sets N: N clusters of 3 masters (no replicas; cluster c on ports BASE+10c .. BASE+10c+2) and N
# standalone masters (BASE+100 ..), waiting until every cluster is ok. Sets cnodes (the clusters'
# `redis-cluster://` URLs) and standalone (the masters' `redis://` URLs), comma-separated.
start_sets() {
  local sets c s p
  sets=$(seq 0 $(($1 - 1)))
  for c in $sets; do for m in 0 1 2; do start $((BASE + c * 10 + m)) cluster; done; done
  for s in $sets; do start $((BASE + 100 + s)); done
  sleep 1
  local clusters=()
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
}
