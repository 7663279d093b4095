#!/usr/bin/env bash
# Benchmarks the dedup index (dedupindex/pebble) at crawl scale:
#   - builds a 10M-entry index (batched PutBatch, one fsync per 10,000 entries),
#     compacts it and reports bytes on disk per entry (with and without the
#     by-URL index);
#   - dedup decision latency p50/p99 (Deduper.Decide and bare Claim) for present
#     and absent digests, and ByURL lookups;
#   - durable commit latency with 1 and 8 concurrent committers;
#   - import throughput from the warcgen benchmark WARC (records/s, MB per CPU-second).
#
# Usage: scripts/bench-index.sh [ENTRIES]   (default 1000000, minutes; LONG=1: 10000000)
# WAYSIDE_BENCH_BYURL=true limits it to the default layout (building each 10M
# variant takes 2-30 minutes depending on load); see the header of
# dedupindex/pebble/bench_test.go for the other knobs.
# Built indexes and the WARC are kept in $WAYSIDE_BENCH_DIR (default /tmp/wayside-bench)
# so a second run skips the build. Needs ~3 GB of disk for 10M entries.
set -euo pipefail
cd "$(dirname "$0")/.."

entries=${1:-$([ -n "${LONG:-}" ] && echo 10000000 || echo 1000000)}
dir=${WAYSIDE_BENCH_DIR:-/tmp/wayside-bench}
mkdir -p "$dir"
warc="$dir/bench.warc.gz"
if [ ! -s "$warc" ]; then
  warcgen=../shared/tools/warcgen
  if [ -d "$warcgen" ]; then
    echo "bench-index: generating $warc with warcgen" >&2
    (cd "$warcgen" && go run . -o "$warc" $([ -n "${LONG:-}" ] || echo -size-mb 48))
  fi
fi

go test -c -o "$dir/pebble.test" ./dedupindex/pebble
export WAYSIDE_BENCH_DIR="$dir" WAYSIDE_BENCH_ENTRIES="$entries"
[ -s "$warc" ] && export WAYSIDE_BENCH_WARC="$warc"
cd "$dir"
./pebble.test -test.run '^$' -test.bench 'BenchmarkSize' -test.benchtime 1x -test.v
# Warm the block cache to its steady state before timing decisions.
WAYSIDE_BENCH_WARM=${WAYSIDE_BENCH_WARM:-2000000} ./pebble.test -test.run '^$' -test.bench 'BenchmarkDecision' -test.benchtime 50000x
./pebble.test -test.run '^$' -test.bench 'BenchmarkCommit' -test.benchtime 2000x
./pebble.test -test.run '^$' -test.bench 'BenchmarkImportWARC' -test.benchtime 1x
