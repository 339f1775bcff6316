#!/usr/bin/env bash
# The fair lock's cost: alternating A/B runs of two release loadgen binaries
# (AFTER = this branch, BEFORE = its parent on main), 64 workers on 4 keys over 4 processes x 16 and
# 16 processes x 4, the fair and the plain (exclusive) lock, 5 spawned redis-server nodes each run;
# then one run of each fair layout per build on 5 nodes of our own, for the servers' commandstats
# (script calls per cycle; --warmup 0s so the counts cover the measured cycles only).
#   OUT=dir BEFORE=/path/loadgen AFTER=/path/loadgen ROUNDS=3 scripts/with-redis results/2026-12-02/fair-cost/run.sh
# Waits while /tmp/quiet exists (someone else is benchmarking) before every run.
set -euo pipefail
OUT=${OUT:?} BEFORE=${BEFORE:?} AFTER=${AFTER:?} ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT"
quiet() { while [ -e /tmp/quiet ]; do sleep 15; done; }
for round in $(seq 1 "$ROUNDS"); do
  for procs in 4 16; do
    for lock in fair exclusive; do
      for build in after before; do
        bin=$AFTER; [ "$build" = before ] && bin=$BEFORE
        quiet
        name="$OUT/$lock-$procs-$build-$round"
        echo "$(cut -d' ' -f1 /proc/loadavg)" > "$name.load"
        "$bin" --engine redlock --concurrency 64 --keys 4 --processes "$procs" --duration 5s \
          --lock "$lock" --json "$name.json" > "$name.txt" 2>&1
      done
    done
  done
done
# commandstats: 5 nodes of our own on free ports 46201-46205.
ports=(46201 46202 46203 46204 46205)
dir=$(mktemp -d)
for p in "${ports[@]}"; do
  redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
    --protected-mode no --loglevel warning --dir "$dir" --dbfilename "$p.rdb" --pidfile "$dir/$p.pid"
done
sleep 0.5
nodes=$(printf 'redis://127.0.0.1:%s,' "${ports[@]}"); nodes=${nodes%,}
for procs in 4 16; do
  for lock in fair exclusive; do
    for build in after before; do
      bin=$AFTER; [ "$build" = before ] && bin=$BEFORE
      quiet
      for p in "${ports[@]}"; do redis-cli -p "$p" flushall >/dev/null; redis-cli -p "$p" config resetstat >/dev/null; done
      name="$OUT/stats-$lock-$procs-$build"
      "$bin" --nodes "$nodes" --engine redlock --concurrency 64 --keys 4 --processes "$procs" \
        --duration 5s --warmup 0s --lock "$lock" --json "$name.json" > "$name.txt" 2>&1
      for p in "${ports[@]}"; do redis-cli -p "$p" info commandstats | sed "s/^/$p /"; done > "$name.commandstats"
    done
  done
done
for p in "${ports[@]}"; do kill "$(cat "$dir/$p.pid")"; done
rm -rf "$dir"
