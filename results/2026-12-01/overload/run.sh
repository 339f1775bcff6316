#!/usr/bin/env bash
# The overload figures: burst, held and overload, 3 runs each (one benchmark at a time), JSON per
# run in this directory, then the median table (summarize.py). Re-run as is for the "after" figures:
#   results/2026-12-01/overload/run.sh            # all three scenarios, 3 runs each
#   RUNS=1 HOLD_FOR=60s results/2026-12-01/overload/run.sh held
# Output files are named <scenario>-<label>-<run>.json; LABEL (default: before) keeps before and after apart.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=results/2026-12-01/overload
RUNS=${RUNS:-3}
LABEL=${LABEL:-before}
HOLD_FOR=${HOLD_FOR:-20s}
SCENARIOS=${*:-burst held overload}
cargo build --release -p loadgen
LG=target/release/loadgen
for s in $SCENARIOS; do
  for i in $(seq 1 "$RUNS"); do
    json="$OUT/$s-$LABEL-$i.json"
    case $s in
      burst)    args=(--scenario burst --burst 10k,100k --acquire-timeout 120s) ;;
      held)     args=(--scenario held --held 10k,100k --hold-for "$HOLD_FOR" --held-ttl 3s --renew-every 1s) ;;
      overload) args=(--scenario overload --overload-workers 10k) ;;
      *) echo "unknown scenario $s" >&2; exit 2 ;;
    esac
    echo "== $s run $i: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    "$LG" "${args[@]}" --json "$json" > "$OUT/$s-$LABEL-$i.txt"
  done
done
python3 "$OUT/summarize.py" "$OUT" "$LABEL" > "$OUT/table-$LABEL.md"
cat "$OUT/table-$LABEL.md"
