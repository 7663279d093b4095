#!/usr/bin/env bash
# Benchmarks ARC support against WARC in the same run, on an ARC made from
# the warcgen WARC (its HTTP responses, by scripts/arcbench warc2arc):
#   - `wayside cdxj` raw MB per CPU-second (user+sys) on the ARC vs the WARC;
#   - `wayside convert arc2warc` raw MB per CPU-second vs its WARC peer,
#     `arcbench rewrite` (the same reader, encoder and gzip level rewriting
#     the WARC), both counted in raw input MB.
# Target: each ARC figure within 20% of the WARC figure.
#
#   scripts/bench-arc.sh                 # generates /tmp/bench-arc.warc.gz (SIZE_MB=150) if missing
#   WARC=/path/file.warc.gz scripts/bench-arc.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE_MB=${SIZE_MB:-150}
WARC=${WARC:-/tmp/bench-arc.warc.gz}
SHARED=${SHARED:-../shared}
if [ ! -f "$WARC" ]; then
  echo "bench-arc: generating $WARC ($SIZE_MB MiB raw) with $SHARED/tools/warcgen" >&2
  (cd "$SHARED/tools/warcgen" && go run . -size-mb "$SIZE_MB" -o "$WARC")
fi
command -v /usr/bin/time >/dev/null || { echo "bench-arc: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/wayside" ./cmd/wayside
go build -o "$tmp/arcbench" ./scripts/arcbench
ARC="$tmp/bench.arc.gz"
"$tmp/arcbench" warc2arc "$WARC" "$ARC"

rawW=$(gzip -dc "$WARC" | wc -c)
rawA=$(gzip -dc "$ARC" | wc -c)

# cpu FILE: user+sys seconds from a /usr/bin/time -v report.
cpu() { awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {print u+s}' "$1"; }
measure() { # name raw cmd...
  local name=$1 raw=$2; shift 2
  /usr/bin/time -v "$@" 2> "$tmp/$name.time" >/dev/null
  local c; c=$(cpu "$tmp/$name.time")
  local rss; rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tmp/$name.time")
  awk -v n="$name" -v raw="$raw" -v c="$c" -v rss="$rss" 'BEGIN { printf "%-20s %8.1f raw MB  %6.2f cpu-s  %7.1f raw MB/cpu-s  max RSS %.0f MB\n", n, raw/1e6, c, raw/1e6/c, rss/1024 }'
  echo "$c" > "$tmp/$name.cpu"
}

echo "WARC $WARC: $(awk -v r="$rawW" 'BEGIN{printf "%.1f", r/1e6}') raw MB; ARC made from it: $(awk -v r="$rawA" 'BEGIN{printf "%.1f", r/1e6}') raw MB"
measure cdxj-warc "$rawW" "$tmp/wayside" cdxj -q -j 1 -o "$tmp/w.cdxj" "$WARC"
measure cdxj-arc "$rawA" "$tmp/wayside" cdxj -q -j 1 -o "$tmp/a.cdxj" "$ARC"
measure rewrite-warc "$rawW" "$tmp/arcbench" rewrite "$WARC" "$tmp/rewritten.warc.gz"
measure arc2warc "$rawA" "$tmp/wayside" convert arc2warc -q -o "$tmp/out" "$ARC"
"$tmp/wayside" convert verify -q "$ARC" "$tmp/out/bench.warc.gz" >/dev/null

ratio() { awk -v ra="$1" -v ca="$(cat "$tmp/$2.cpu")" -v rw="$3" -v cw="$(cat "$tmp/$4.cpu")" -v n="$5" \
  'BEGIN { a = ra/ca; w = rw/cw; printf "%-36s %.2f (%s)\n", n, a/w, (a >= 0.8*w ? "within 20%" : "MORE THAN 20% SLOWER") }'; }
ratio "$rawA" cdxj-arc "$rawW" cdxj-warc "cdxj: ARC / WARC MB per cpu-s"
ratio "$rawA" arc2warc "$rawW" rewrite-warc "arc2warc / WARC rewrite MB per cpu-s"
