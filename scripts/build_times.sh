#!/usr/bin/env bash
# How long a contributor waits: the figures docs/development.md keeps, measured here.
#
#   scripts/build_times.sh [method] [suite] [ci] [cold]     (default: method suite)
#
#   method  touch one method file (src/methods/mst.rs), then its unit tests' first result:
#           the edit → test loop (goal ≤ 90 s)
#   suite   the full suite, `cargo test --release`, on a warm target folder (goal ≤ 10 min)
#   ci      touch one file, then `.ci/run` (goal ≤ 15 min)
#   cold    an empty target folder: build the test targets, then the suite (goal ≤ 25 min,
#           crates already downloaded)
#
# Prints one Markdown row per measure with the commit, for docs/development.md. Run it
# alone on the machine: anything else on the cores lengthens every figure.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/dpsynth-target}"
export CARGO_INCREMENTAL=0 CARGO_TERM_COLOR=never
commit="$(git rev-parse --short HEAD)"
cores="$(nproc)"
log="$(mktemp)"

seconds() { # seconds COMMAND…: runs it, its output to the log, prints the wall seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >>"$log" 2>&1 || { echo "failed: $* (see $log)" >&2; exit 1; }
  t1=$(date +%s.%N)
  python3 -c "print(round($t1 - $t0))"
}
row() { printf '| %s | %s s | `%s`, %s cores |\n' "$1" "$2" "$commit" "$cores"; }

echo "| measure | time | commit, machine |"
echo "|---|---|---|"
for what in "${@:-method suite}"; do
  for m in $what; do
    case "$m" in
      method)
        cargo test --release --lib methods::mst --no-run >>"$log" 2>&1
        touch src/methods/mst.rs
        row "one method file touched → its unit tests' result" \
          "$(seconds cargo test --release --lib methods::mst)" ;;
      suite)
        cargo test --release --no-run >>"$log" 2>&1
        row "full suite, warm (\`cargo test --release\`)" "$(seconds cargo test --release)" ;;
      ci)
        touch src/methods/mst.rs
        row "\`.ci/run\` after one file changed" "$(seconds .ci/run)" ;;
      cold)
        cold="$(mktemp -d)"
        row "cold build of the test targets" \
          "$(CARGO_TARGET_DIR="$cold" seconds cargo test --release --no-run)"
        row "then the suite" "$(CARGO_TARGET_DIR="$cold" seconds cargo test --release)"
        rm -rf "$cold" ;;
      *) echo "unknown measure '$m' (method, suite, ci, cold)" >&2; exit 2 ;;
    esac
  done
done
rm -f "$log"
