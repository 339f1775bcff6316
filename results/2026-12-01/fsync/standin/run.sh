#!/usr/bin/env bash
# First figures: what `appendfsync always` costs a pipelined lock client. Starts 5
# redis-servers on free loopback ports with an AOF under /work (a real disk; /tmp is the same disk here)
# for each persistence mode, runs loadgen's standard scenarios (a)/(b)/(c) with redlock, rslock and the
# ceiling on them (`--nodes`), stops the servers by pid. One run per mode per round; ROUNDS rounds, modes
# alternating. (loadgen has no --persistence flag yet: this script is the stand-in.)
#   results/2026-12-01/fsync/standin/run.sh         # ROUNDS=1; FIRST=2 ROUNDS=2 for runs 2-3 (superseded by ../run.sh)
set -euo pipefail
cd "$(dirname "$0")/../../../.."
OUT=results/2026-12-01/fsync/standin
ROUNDS=${ROUNDS:-1}
FIRST=${FIRST:-1}
LG=${LG:-target/release/loadgen}
[[ -x $LG ]] || cargo build --release -p loadgen
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
for r in $(seq "$FIRST" $((FIRST + ROUNDS - 1))); do
  for mode in none everysec always; do
    dir=$(mktemp -d /work/aof-XXXXXX)
    pids=(); urls=()
    for i in 1 2 3 4 5; do
      port=$(free_port)
      args=(--port "$port" --bind 127.0.0.1 --save "" --dir "$dir" --dbfilename "n$i.rdb")
      case $mode in
        none) args+=(--appendonly no) ;;
        *) args+=(--appendonly yes --appendfsync "$mode" --appenddirname "aof-$i") ;;
      esac
      redis-server "${args[@]}" --daemonize no >"$dir/n$i.log" 2>&1 &
      pids+=($!); urls+=("redis://127.0.0.1:$port")
    done
    sleep 1
    nodes=$(IFS=,; echo "${urls[*]}")
    echo "== round $r, persistence $mode, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    "$LG" --nodes "$nodes" --engine redlock,rslock,ceiling --json "$OUT/$mode-$r.json" > "$OUT/$mode-$r.txt" || true
    kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true
    rm -rf "$dir"
  done
done
