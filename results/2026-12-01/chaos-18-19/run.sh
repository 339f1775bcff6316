#!/usr/bin/env bash
# Reproduces the figures in README.md beside this file: scenarios 18 (semaphores) and 19 (fair lock)
# under the mixed faults, 3 `--short` runs and 2 full runs each, then the whole `--short` suite once.
# One chaos run at a time (the machine is shared); each output, with `uptime` before and after, goes
# to out/. Needs redis-server on the PATH (scripts/with-redis installs it).
#
#   results/2026-12-01/chaos-18-19/run.sh            # from the repository root
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../../.."
out="$here/out"
mkdir -p "$out"
cargo build --release -p chaos
chaos="${CARGO_TARGET_DIR:-target}/release/chaos"

run() {
    local name="$1"
    shift
    {
        echo "# $(git rev-parse --short HEAD) chaos $*"
        echo "# before: $(uptime)"
        /usr/bin/time -f "# elapsed %e s" "$chaos" "$@" 2>&1 || echo "# exit status $?"
        echo "# after: $(uptime)"
    } > "$out/$name.txt" 2>&1
    grep -E '^  (ok|FAIL) |^# (elapsed|exit)' "$out/$name.txt" || true
}

for i in 1 2 3; do
    run "short-18-$i" --short --scenario 18
    run "short-19-$i" --short --scenario 19
done
for i in 1 2; do
    run "full-18-$i" --scenario 18
    run "full-19-$i" --scenario 19
done
run short-suite --short

# The fair lock's order claim at its edge (tests/fair_ticket_window.rs, ignored in CI): B's ticket
# round runs before A's enqueue, B's enqueue begins after A's completed; B can still be first.
{
    echo "# $(git rev-parse --short HEAD) cargo test --test fair_ticket_window -- --ignored --nocapture"
    echo "# before: $(uptime)"
    cargo test --test fair_ticket_window -- --ignored --nocapture 2>&1 | grep -E '^(trial|B,|test )' || true
    echo "# after: $(uptime)"
} > "$out/fair-ticket-window.txt"
cat "$out/fair-ticket-window.txt"
