#!/bin/sh
# Replay-fixity benchmarks (needs Chromium; uses ../shared's pywb-iana WARC
# when present, else the built-in test site):
#   - BenchmarkPageLoad: bare page load (fresh incognito tab in a browser
#     without the scope proxy, navigate, same quiet-period wait) vs a full
#     fixity replay (interception, scope proxy, bodies, raw id_ fetches,
#     hashing) of the same memento, alternated; reports bare-ms, fixity-ms
#     and overhead-%.
#   - BenchmarkSweep: sweep throughput (mementos/min) with 1, 2 and 4 pages at
#     once, and peak memory of the test process plus its Chromium children
#     (summed RSS, which counts pages shared between Chromium processes once
#     per process, and summed PSS, the fair total).
#   - BenchmarkSweepEvidence: sweep throughput and disk per memento with
#     evidence retention off (none) and on (keep-all), alternated in the
#     same run; reports none-/keep-all-mementos/min, KiB/memento of each
#     store, the time overhead of keeping evidence and evidence KiB/memento.
# Usage: scripts/bench-fixity.sh     (PAGELOADS=3x SWEEPS=1x EVIDENCE=1x by default, minutes;
#                                      LONG=1: 10x, 3x, 3x)
# Each benchmark is compiled once and bounded by TIMEOUT (default 10m).
set -eu
cd "$(dirname "$0")/.."
if [ -n "${LONG:-}" ]; then d1=10x d2=3x; else d1=3x d2=1x; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go test -c -o "$work/fixity.test" ./fixity/
cd fixity # the benchmarks find their test data relative to the package
"$work/fixity.test" -test.run '^$' -test.bench 'BenchmarkPageLoad' -test.benchtime "${PAGELOADS:-$d1}" -test.count 1 -test.timeout "${TIMEOUT:-10m}"
"$work/fixity.test" -test.run '^$' -test.bench 'BenchmarkSweep$' -test.benchtime "${SWEEPS:-$d2}" -test.count 1 -test.timeout "${TIMEOUT:-10m}"
"$work/fixity.test" -test.run '^$' -test.bench 'BenchmarkSweepEvidence' -test.benchtime "${EVIDENCE:-$d2}" -test.count 1 -test.timeout "${TIMEOUT:-10m}"
