# What the dated native-command run.sh scripts share: one build's loadgen with the nodes' native commands
# (side N) against the same build forced to the scripts (side S, LOADGEN_SCRIPTS_ONLY=1), alternating,
# so that a drift in the machine's load hits both sides alike. A run.sh sources it from its own
# directory (`. ../../lib/native-sides.sh`) and calls
#
#   native_sides RUNS PREFIX LOADGEN-ARG...
#
# which runs, for i in 1..RUNS and side in N S, `$LOADGEN LOADGEN-ARG... --quiet --json
# PREFIX$side-$i.json > PREFIX$side-$i.txt`, telling stderr the load and the server's version first.
native_sides() {
  local runs=$1 prefix=$2 i side
  shift 2
  for i in $(seq 1 "$runs"); do
    for side in N S; do
      echo "== $side $i, load $(cut -d' ' -f1-3 /proc/loadavg), $(redis-server --version | cut -c1-40)" >&2
      if [[ $side == S ]]; then export LOADGEN_SCRIPTS_ONLY=1; else unset LOADGEN_SCRIPTS_ONLY; fi
      "$LOADGEN" "$@" --quiet --json "$prefix$side-$i.json" > "$prefix$side-$i.txt"
    done
  done
}
