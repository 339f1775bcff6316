#!/usr/bin/env bash
# Server cost of one coalesced extend call (EXTEND_MANY) by batch size, on one redis-server this script
# starts on a free port: every key present and ours (the renewal case), 64,000 keys extended per size,
# redis-benchmark -c 8. Prints the node's user CPU per key and INFO commandstats' usec per EVALSHA call.
#   results/2026-12-01/coalesce/script-cost.sh > results/2026-12-01/coalesce/script-cost.txt
set -euo pipefail
cd "$(dirname "$0")/../../.."
P=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$P" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
  --pidfile "/tmp/script-cost-$P.pid" >/dev/null
trap 'kill "$(cat /tmp/script-cost-$P.pid)"' EXIT
sleep 0.5
src() { python3 - "$1" <<'PY'
import sys
s = open('src/scripts.rs').read()
i = s.index(sys.argv[1] + ': Script')
print(s[s.index('source: "', i) + 9:s.index('",\n    sha1', i)].replace('\\\n', ''))
PY
}
MANY=$(redis-cli -p "$P" SCRIPT LOAD "$(src EXTEND_MANY)")
ONE=$(redis-cli -p "$P" SCRIPT LOAD "$(src EXTEND)")
cpu() { redis-cli -p "$P" INFO cpu | tr -d '\r' | awk -F: '/^used_cpu_user:/{print $2}'; }
echo "redis $(redis-server --version | grep -o 'v=[0-9.]*'), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
echo "script        batch  user µs/key  usec/call  usec/key (commandstats)"
for n in 1 4 16 32 64 128 256; do
  for s in MANY ONE; do
    [[ $s == ONE && $n != 1 ]] && continue
    keys=(); vals=()
    for i in $(seq 1 "$n"); do
      redis-cli -p "$P" SET "k$i" "value-of-lock-$i-xxxxx" >/dev/null
      keys+=("k$i"); vals+=("value-of-lock-$i-xxxxx" 3000)
    done
    sha=${!s}
    redis-cli -p "$P" CONFIG RESETSTAT >/dev/null
    t0=$(cpu)
    redis-benchmark -p "$P" -n $((64000 / n)) -c 8 -q EVALSHA "$sha" "$n" "${keys[@]}" "${vals[@]}" >/dev/null
    t1=$(cpu)
    per_call=$(redis-cli -p "$P" INFO commandstats | tr -d '\r' | grep cmdstat_evalsha | sed 's/.*usec_per_call=\([0-9.]*\).*/\1/')
    python3 -c "n=$n; print(f'{\"EXTEND_MANY\" if \"$s\"==\"MANY\" else \"EXTEND\":12s} {n:6d} {($t1-$t0)*1e6/64000:12.2f} {float($per_call):10.1f} {float($per_call)/n:9.2f}')"
  done
done
