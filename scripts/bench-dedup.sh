#!/usr/bin/env bash
# Benchmarks `wayside dedup run` (byte verification, fast validation) on the
# default warcgen WARC and prints raw MB per CPU-second and the size saving,
# beside the floor (gunzip + SHA-1 of the input, in Go, same run) and, when
# $WARCHAEOLOGY names a built `warc` binary, warchaeology's `warc dedup`.
# Targets: >= 150 raw MB per CPU-second, saving >= 35.5%.
#
#   scripts/bench-dedup.sh                  # generates /tmp/bench.warc.gz if missing
#   WARC=/path/file.warc.gz WARCHAEOLOGY=/path/warc scripts/bench-dedup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
WARC=${WARC:-/tmp/bench.warc.gz}
SHARED=${SHARED:-../shared}
if [ ! -f "$WARC" ]; then
  echo "bench-dedup: generating $WARC with $SHARED/tools/warcgen" >&2
  (cd "$SHARED/tools/warcgen" && go run . -o "$WARC")
fi
command -v /usr/bin/time >/dev/null || { echo "bench-dedup: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/wayside" ./cmd/wayside
raw=$(gzip -dc "$WARC" | wc -c)
in=$(stat -c %s "$WARC")

cpu() { awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {print u+s}' "$1"; }
rss() { awk -F': ' '/Maximum resident set size/ {print $2/1024}' "$1"; }

/usr/bin/time -v "$tmp/wayside" dedup run -q -j 1 -o "$tmp/out" "$WARC" > "$tmp/run.txt" 2> "$tmp/run.time"
out=$(stat -c %s "$tmp/out/$(basename "$WARC")")
/usr/bin/time -v sh -c "gzip -dc '$WARC' | sha1sum" > /dev/null 2> "$tmp/floor.time"

awk -v raw="$raw" -v inb="$in" -v out="$out" -v c="$(cpu "$tmp/run.time")" -v r="$(rss "$tmp/run.time")" -v f="$(cpu "$tmp/floor.time")" 'BEGIN {
  printf "file              %s bytes stored, %.1f MB raw\n", inb, raw/1e6
  printf "wayside dedup run %.2f CPU-s, %.1f raw MB per CPU-second, saving %.1f%%, max RSS %.0f MB\n", c, raw/1e6/c, 100*(1-out/inb), r
  printf "floor (gunzip|sha1sum) %.2f CPU-s, %.1f raw MB per CPU-second\n", f, raw/1e6/f
}'
grep -E "revisits|collisions|saved" "$tmp/run.txt" || true
if [ -n "${WARCHAEOLOGY:-}" ]; then
  mkdir -p "$tmp/w"
  /usr/bin/time -v "$WARCHAEOLOGY" dedup --one-to-one -w "$tmp/w" --index-dir "$tmp/widx" -K "$WARC" > /dev/null 2> "$tmp/w.time"
  wout=$(stat -c %s "$tmp/w/$(basename "$WARC")")
  awk -v raw="$raw" -v inb="$in" -v out="$wout" -v c="$(cpu "$tmp/w.time")" -v r="$(rss "$tmp/w.time")" 'BEGIN {
    printf "warchaeology      %.2f CPU-s, %.1f raw MB per CPU-second, saving %.1f%%, max RSS %.0f MB\n", c, raw/1e6/c, 100*(1-out/inb), r }'
fi
