#!/bin/sh
# Replay-fixity benchmarks (needs Chromium; uses ../shared's pywb-iana WARC
# when present, else the built-in test site):
#   - BenchmarkPageLoad: bare page load (fresh incognito tab, navigate, same
#     quiet-period wait) vs a full fixity replay (interception, bodies, raw
#     id_ fetches, hashing) of the same memento; prints the overhead.
#   - BenchmarkSweep: sweep throughput (mementos/min) with 1, 2 and 4 pages at
#     once, and peak RSS of the test process plus its Chromium children.
# Usage: scripts/bench-fixity.sh            (BENCHTIME=5x to run longer)
set -eu
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench 'BenchmarkPageLoad|BenchmarkSweep' -benchtime "${BENCHTIME:-3x}" -count 1 ./fixity/ | tee "$out"
awk '/BenchmarkPageLoad\/bare/ {bare=$3} /BenchmarkPageLoad\/fixity/ {fix=$3}
     END { if (bare > 0) printf "fixity replay overhead over a bare load: %.1f%% (%.0f ms vs %.0f ms)\n", (fix-bare)*100/bare, fix/1e6, bare/1e6 }' "$out"
