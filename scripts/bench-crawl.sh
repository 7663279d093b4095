#!/usr/bin/env bash
# bench-crawl.sh — measure `wayside crawl` throughput in raw WARC megabytes
# written per CPU-second of the crawler process (user+sys).
#
# It builds wayside and the benchmark site (crawl/sitetest/benchsite), serves
# PAGES distinct resources of SIZE bytes (half HTML text, half binary) on
# 127.0.0.1 from a separate process, crawls them once into a temporary
# directory and divides the uncompressed size of the WARC files written
# (zcat | wc -c) by the crawler's user+sys CPU time.
#
#   scripts/bench-crawl.sh                 # PAGES=400 SIZE=262144 PARALLEL=4
#   PAGES=1000 SIZE=1048576 scripts/bench-crawl.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PAGES=${PAGES:-400}
SIZE=${SIZE:-262144}
PARALLEL=${PARALLEL:-4}
work=$(mktemp -d)
trap 'kill "${site_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/wayside" ./cmd/wayside
go build -o "$work/benchsite" ./crawl/sitetest/benchsite
"$work/benchsite" -pages "$PAGES" -size "$SIZE" >"$work/url" &
site_pid=$!
for _ in $(seq 50); do [ -s "$work/url" ] && break; sleep 0.1; done
url=$(head -1 "$work/url")
TIMEFORMAT='%U %S'
cpu=$( { time "$work/wayside" crawl --quiet --delay 0 --parallel "$PARALLEL" --max-pages 0 --warc-dir "$work/warcs" "$url" >"$work/summary" 2>"$work/log"; } 2>&1 )
raw=$(cat "$work"/warcs/*.warc.gz | gzip -dc | wc -c)
stored=$(cat "$work"/warcs/*.warc.gz | wc -c)
cat "$work/summary"
awk -v cpu="$cpu" -v raw="$raw" -v stored="$stored" 'BEGIN {
  split(cpu, t, " "); s = t[1] + t[2];
  printf "raw WARC bytes %d (%.1f MB), stored %.1f MB, crawler CPU %.2f s (user %.2f + sys %.2f)\n", raw, raw/1e6, stored/1e6, s, t[1], t[2];
  printf "throughput: %.1f raw MB written per CPU-second\n", raw/1e6/s }'
