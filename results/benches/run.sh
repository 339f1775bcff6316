#!/usr/bin/env bash
# Runs both bench targets (cargo runs e2e, then logic), saves the run as criterion baseline NAME (default: main) in
# target/criterion, and rewrites this directory's summary from it: machine.md, bench-output.txt (the
# benches' printed output), BASELINE.md and baseline.json.
#
# Usage: results/benches/run.sh [NAME]        (from anywhere; about 5 minutes on 2 cores)
#
# Needs cargo and python3; redis-server is installed by scripts/with-redis when missing.
# `--bench logic --bench e2e` rather than plain `cargo bench`: the library's own (empty) libtest bench
# harness would reject criterion's `--save-baseline` flag.
set -euo pipefail
cd "$(dirname "$0")/../.."
name="${1:-main}"
out=results/benches
cmd=(cargo bench --features fred --bench logic --bench e2e -- --save-baseline "$name")

scripts/with-redis true # install redis-server first, so the install is not part of the run
dirty=""
git diff --quiet HEAD -- src benches tests/common Cargo.toml Cargo.lock || dirty=" (with uncommitted changes)"
{
  echo "## Machine and command"
  echo
  echo "- date (UTC): $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- commit: \`$(git rev-parse HEAD)\`$dirty"
  echo "- command: \`results/benches/run.sh $name\`, which runs \`scripts/with-redis ${cmd[*]}\`"
  echo "- \`nproc\`: $(nproc)"
  echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "- \`uname -a\`: \`$(uname -a)\`"
  echo "- \`redis-server --version\`: \`$(redis-server --version)\`"
  echo "- \`rustc -V\`: \`$(rustc -V)\`"
  echo "- load average (1, 5, 15 min) before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/machine.md"

# Progress lines go to stderr; the results criterion prints go to stdout, kept in bench-output.txt.
scripts/with-redis "${cmd[@]}" | tee "$out/bench-output.txt"

echo "- load average (1, 5, 15 min) after the run: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.md"
python3 "$out/summarize.py" --baseline "$name" --criterion-dir "${CARGO_TARGET_DIR:-target}/criterion" \
  --log "$out/bench-output.txt" --machine "$out/machine.md" --out "$out"
