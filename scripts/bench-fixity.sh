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
# Usage: scripts/bench-fixity.sh     (PAGELOADS=10x SWEEPS=3x EVIDENCE=3x by default)
set -eu
cd "$(dirname "$0")/.."
go test -run '^$' -bench 'BenchmarkPageLoad' -benchtime "${PAGELOADS:-10x}" -count 1 ./fixity/
go test -run '^$' -bench 'BenchmarkSweep' -benchtime "${SWEEPS:-3x}" -count 1 ./fixity/
go test -run '^$' -bench 'BenchmarkSweepEvidence' -benchtime "${EVIDENCE:-3x}" -count 1 ./fixity/
