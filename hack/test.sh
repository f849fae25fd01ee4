#!/usr/bin/env bash
# Runs every test of the workspace with several test binaries at once.
#
# `cargo test` runs test binaries one after another, and most of an integration binary's time is spent
# waiting (a control plane starting, a 60 s steady-state window, a Deployment timeout) rather than
# computing; on a 2-core CI machine running TEST_JOBS binaries side by side (default 4) cuts the wall
# time to well under half. A second `cargo test` cannot do this: cargo holds the build-directory lock for
# as long as the tests run. So this script builds once with `cargo test --no-run`, reads the test
# executables from cargo's JSON messages, and runs each from its package's folder (as cargo does), its
# output in a log file of its own that is printed when it fails. Doc tests run through cargo at the end.
#
# Environment: TEST_JOBS (parallel binaries), TEST_LOG_DIR (default target/test-logs), plus whatever
# the tests read (CI, CAPI_CONTROL_PLANE_BIN_DIR, RUST_LOG, ...). Exit status: 0 when every binary passed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
jobs="${TEST_JOBS:-4}"
target="${CARGO_TARGET_DIR:-$root/target}"
logs="${TEST_LOG_DIR:-$target/test-logs}"
rm -rf "$logs"
mkdir -p "$logs"

# One line per test executable: "<package folder> <executable>".
cargo test --workspace --locked --no-run --message-format=json-render-diagnostics \
  | grep '"reason":"compiler-artifact"' | grep -E '"profile":\{[^}]*"test":true' \
  | grep -v '"executable":null' \
  | sed -E 's/.*"manifest_path":"([^"]*)\/Cargo\.toml".*"executable":"([^"]*)".*/\1 \2/' \
  | sort -u >"$logs/all"
# The binaries that take minutes start first, so that none of them is left running alone at the end.
# stress.rs keeps both cores busy on purpose for minutes: beside it, the real node's managers (real
# processes with liveness probes) and every other binary's waits would be measured against a machine it
# starves, so it runs alone after the others; so does machine.rs, a second real node with both managers
# and moto, which starved beside real_node.rs and three control planes (core not Ready in 420 s).
alone='/(stress|machine)-[0-9a-f]+$'
slow='/(real_node|hostile|adoption|install|steady_state|truthful|diff|rbac_restart|providers|revisions|status|process|profiles|inputs)-[0-9a-f]+$'
{ grep -E "$slow" "$logs/all" || true; grep -vE "$slow|$alone" "$logs/all" || true; } >"$logs/binaries"
{ grep -E "$alone" "$logs/all" || true; } >"$logs/alone"

run_one() {
  local dir="$1" exe="$2" logs="$3"
  local name
  name="$(basename "$dir")-$(basename "$exe")"
  local start=$SECONDS rc=0
  (cd "$dir" && "$exe") >"$logs/$name.log" 2>&1 || rc=$?
  local took=$((SECONDS - start))
  if [[ $rc -eq 0 ]]; then
    printf 'ok      %4ss  %s\n' "$took" "$name"
  else
    printf 'FAILED  %4ss  %s (exit %s, log %s)\n' "$took" "$name" "$rc" "$logs/$name.log"
    echo "$name" >>"$logs/failed"
  fi
}
export -f run_one

count=$(cat "$logs/binaries" "$logs/alone" | wc -l)
echo "running $count test binaries, $jobs at a time, then $(wc -l <"$logs/alone") alone (logs in $logs)"
start=$SECONDS
# xargs keeps going after a failure; run_one records failures itself.
xargs -P "$jobs" -L 1 bash -c 'run_one "$0" "$1" "'"$logs"'"' <"$logs/binaries" || true
xargs -r -P 1 -L 1 bash -c 'run_one "$0" "$1" "'"$logs"'"' <"$logs/alone" || true

cargo test --workspace --locked --doc -q >"$logs/doctests.log" 2>&1 || echo doctests >>"$logs/failed"
echo "test binaries and doc tests done in $((SECONDS - start))s"

if [[ -s "$logs/failed" ]]; then
  while read -r name; do
    printf '\n===== %s =====\n' "$name"
    # What failed first (a panic's message sits among the log lines before the backtrace, which a
    # tail would cut off), then the failure summary at the end; the whole log can be long.
    grep -A 12 -E "^thread '.*' (\([0-9]+\) )?panicked at" "$logs/$name.log" | grep -vE '^\s+[0-9]+: |^\s+at ' | head -n 60 || true
    printf -- '----- end of %s.log -----\n' "$name"
    tail -n 120 "$logs/$name.log"
  done <"$logs/failed"
  printf '\nfailed: %s\n' "$(tr '\n' ' ' <"$logs/failed")"
  exit 1
fi
echo "all tests passed"
