#!/usr/bin/env bash
# Benchmarks `wayside cdxj` on the warcgen benchmark WARC and prints
# uncompressed (raw) megabytes indexed per CPU second (user+sys), payload
# digests included. Target: >= 150 raw MB per CPU-second.
#
#   scripts/bench-cdxj.sh            # generates /tmp/bench.warc.gz if missing
#   WARC=/path/file.warc.gz scripts/bench-cdxj.sh
set -euo pipefail
cd "$(dirname "$0")/.."

WARC=${WARC:-/tmp/bench.warc.gz}
SHARED=${SHARED:-../shared}
if [ ! -f "$WARC" ]; then
  echo "bench-cdxj: generating $WARC with $SHARED/tools/warcgen" >&2
  (cd "$SHARED/tools/warcgen" && go run . -o "$WARC")
fi
command -v /usr/bin/time >/dev/null || { echo "bench-cdxj: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }

bin=$(mktemp -d)/wayside
trap 'rm -rf "$(dirname "$bin")" /tmp/bench-cdxj.$$.*' EXIT
go build -o "$bin" ./cmd/wayside

# Uncompressed size of the WARC.
raw=$(gzip -dc "$WARC" | wc -c)

/usr/bin/time -v "$bin" cdxj -q -j 1 -o /tmp/bench-cdxj.$$.cdxj "$WARC" 2> /tmp/bench-cdxj.$$.time
user=$(awk -F': ' '/User time/ {print $2}' /tmp/bench-cdxj.$$.time)
sys=$(awk -F': ' '/System time/ {print $2}' /tmp/bench-cdxj.$$.time)
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' /tmp/bench-cdxj.$$.time)
rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' /tmp/bench-cdxj.$$.time)
lines=$(wc -l < /tmp/bench-cdxj.$$.cdxj)

awk -v raw="$raw" -v u="$user" -v s="$sys" -v wall="$wall" -v rss="$rss" -v lines="$lines" -v f="$WARC" 'BEGIN {
  cpu = u + s
  printf "file            %s\n", f
  printf "raw bytes       %d (%.1f MB)\n", raw, raw / 1e6
  printf "index lines     %d\n", lines
  printf "cpu (user+sys)  %.2f s (user %.2f, sys %.2f), wall %s\n", cpu, u, s, wall
  printf "max RSS         %.1f MB\n", rss / 1024
  printf "throughput      %.1f raw MB per CPU-second\n", raw / 1e6 / cpu
}'
