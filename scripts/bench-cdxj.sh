#!/usr/bin/env bash
# Benchmarks `wayside cdxj` against the gunzip+SHA-1 floor (`go run
# ./scripts/dedupbench floor FILE`: inflate every gzip member and SHA-1 every
# uncompressed byte, the least work any indexer that digests payloads must
# do) on warcgen WARCs, and prints for each uncompressed (raw) megabytes per
# CPU-second (user+sys) of both and their ratio. Target: cdxj >= 0.92x the
# floor at 1x and 4x input.
#
# Runs alternate (floor, cdxj, floor, cdxj, ...) so both see the same
# machine load; the figures are medians of RUNS runs (default 5).
#
#   scripts/bench-cdxj.sh                  # the default WARC plus 1x and 4x
#   WARC=/path/file.warc.gz scripts/bench-cdxj.sh   # one file only
#   RUNS=3 scripts/bench-cdxj.sh
#
# The default WARC (/tmp/bench.warc.gz, ~409 MB raw) is generated with
# ../shared/tools/warcgen when missing; the 1x and 4x WARCs
# (/tmp/wayside-bench-all/warcgen-48.warc.gz, ~51 MB raw, and
# warcgen-192.warc.gz, ~201 MB raw; override with WARC_1X and WARC_4X) are
# read only, and skipped with a note when absent.
set -euo pipefail
cd "$(dirname "$0")/.."

SHARED=${SHARED:-../shared}
RUNS=${RUNS:-5}
command -v /usr/bin/time >/dev/null || { echo "bench-cdxj: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }

files=()
if [ -n "${WARC:-}" ]; then
  files=("$WARC")
else
  def=/tmp/bench.warc.gz
  if [ ! -f "$def" ]; then
    echo "bench-cdxj: generating $def with $SHARED/tools/warcgen" >&2
    (cd "$SHARED/tools/warcgen" && go run . -o "$def")
  fi
  files=("$def")
  for f in "${WARC_1X:-/tmp/wayside-bench-all/warcgen-48.warc.gz}" "${WARC_4X:-/tmp/wayside-bench-all/warcgen-192.warc.gz}"; do
    if [ -f "$f" ]; then files+=("$f"); else echo "bench-cdxj: $f absent, skipped" >&2; fi
  done
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/wayside" ./cmd/wayside
go build -o "$tmp/dedupbench" ./scripts/dedupbench

# cpu CMD...: runs CMD, prints "user+sys maxrss_kb". CPU comes from bash's
# time (milliseconds; /usr/bin/time prints hundredths, 5% of a 1x run), the
# peak RSS from /usr/bin/time, whose own few hundred microseconds both
# sides pay.
cpu() {
  local TIMEFORMAT='%3U %3S'
  { time /usr/bin/time -f '%M' -o "$tmp/rss1" "$@" >/dev/null 2>"$tmp/err"; } 2> "$tmp/time" || { cat "$tmp/err" >&2; exit 1; }
  awk -v rss="$(cat "$tmp/rss1")" '{printf "%.3f %d\n", $1 + $2, rss}' "$tmp/time"
}

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

printf "%-44s %9s %9s %9s %9s %7s %8s\n" file "raw MB" "floor" "cdxj" "ratio" "lines" "RSS MB"
printf "%-44s %9s %9s %9s %9s %7s %8s\n" "" "" "MB/CPU-s" "MB/CPU-s" "" "" "cdxj"
for f in "${files[@]}"; do
  read -r raw _ < <("$tmp/dedupbench" floor "$f") # the uncompressed size
  : > "$tmp/floor"
  : > "$tmp/cdxj"
  : > "$tmp/rss"
  for _ in $(seq "$RUNS"); do
    cpu "$tmp/dedupbench" floor "$f" | awk '{print $1}' >> "$tmp/floor"
    rm -f "$tmp/out.cdxj"
    cpu "$tmp/wayside" cdxj -q -j 1 -o "$tmp/out.cdxj" "$f" > "$tmp/one"
    awk '{print $1}' "$tmp/one" >> "$tmp/cdxj"
    awk '{print $2}' "$tmp/one" >> "$tmp/rss"
  done
  fl=$(median < "$tmp/floor")
  cx=$(median < "$tmp/cdxj")
  rss=$(median < "$tmp/rss")
  lines=$(wc -l < "$tmp/out.cdxj")
  awk -v f="$(basename "$f")" -v raw="$raw" -v fl="$fl" -v cx="$cx" -v lines="$lines" -v rss="$rss" 'BEGIN {
    printf "%-44s %9.1f %9.1f %9.1f %8.3fx %7d %8.1f\n", f, raw / 1e6, raw / 1e6 / fl, raw / 1e6 / cx, fl / cx, lines, rss / 1024
  }'
done
echo "(medians of $RUNS alternating runs; cdxj -j 1; ratio = cdxj throughput / floor throughput; CPU: $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo))"
