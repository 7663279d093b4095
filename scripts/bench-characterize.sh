#!/usr/bin/env bash
# bench-characterize.sh — format characterization throughput and overhead.
#
# 1. `wayside characterize` on the warcgen benchmark WARC: uncompressed (raw)
#    MB per CPU-second (user+sys) and peak RSS, next to `wayside cdxj` on
#    the same file in the same run (the floor: reading, decompressing and
#    digesting the records). Target: >= 50 raw MB per CPU-second.
# 2. `wayside crawl` of the benchmark site (crawl/sitetest/benchsite) with
#    and without --characterize, in the same run: raw WARC MB written per
#    CPU-second of the crawler process (characterization runs in it).
#    Target: at most 30% lower with characterization on.
#
#   scripts/bench-characterize.sh              # generates /tmp/bench.warc.gz if missing
#   WARC=/path/file.warc.gz PAGES=400 SIZE=262144 scripts/bench-characterize.sh
set -euo pipefail
cd "$(dirname "$0")/.."
WARC=${WARC:-/tmp/bench.warc.gz}
SHARED=${SHARED:-../shared}
PAGES=${PAGES:-400}
SIZE=${SIZE:-262144}
PARALLEL=${PARALLEL:-4}
if [ ! -f "$WARC" ]; then
  echo "bench-characterize: generating $WARC with $SHARED/tools/warcgen" >&2
  (cd "$SHARED/tools/warcgen" && go run . -o "$WARC")
fi
command -v /usr/bin/time >/dev/null || { echo "bench-characterize: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
work=$(mktemp -d)
trap 'kill "${site_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/wayside" ./cmd/wayside
go build -o "$work/benchsite" ./crawl/sitetest/benchsite

# measure LABEL CMD...: runs CMD under /usr/bin/time; sets cpu and rss.
measure() {
  local label=$1; shift
  /usr/bin/time -f "%U %S %M" -o "$work/$label.time" "$@" >"$work/$label.out" 2>"$work/$label.err"
  read -r u s rss <"$work/$label.time"
  cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
  rssmb=$(awk -v r="$rss" 'BEGIN { printf "%.0f", r / 1024 }')
}

raw=$(gzip -dc "$WARC" | wc -c)
echo "== wayside characterize on $WARC ($(awk -v r="$raw" 'BEGIN { printf "%.1f", r/1e6 }') raw MB)"
measure cdxj "$work/wayside" cdxj -q -j 1 -o "$work/x.cdxj" "$WARC"
cdxj_cpu=$cpu cdxj_rss=$rssmb
measure char "$work/wayside" characterize -q -j 1 "$WARC"
char_cpu=$cpu char_rss=$rssmb
awk -v raw="$raw" -v c="$char_cpu" -v f="$cdxj_cpu" -v rc="$char_rss" -v rf="$cdxj_rss" 'BEGIN {
  printf "  wayside cdxj (floor)     %6.2f CPU-s  %6.1f raw MB/CPU-s  peak RSS %4d MB\n", f, raw/1e6/f, rf
  printf "  wayside characterize     %6.2f CPU-s  %6.1f raw MB/CPU-s  peak RSS %4d MB   (%.2fx the floor'"'"'s CPU; target >= 50 MB/CPU-s)\n", c, raw/1e6/c, rc, c/f }'
grep -E "records|UNKNOWN" "$work/char.out" | head -3 | sed 's/^/  /'

echo "== wayside crawl of benchsite ($PAGES resources of $SIZE bytes), characterization off vs on"
"$work/benchsite" -pages "$PAGES" -size "$SIZE" >"$work/url" &
site_pid=$!
for _ in $(seq 50); do [ -s "$work/url" ] && break; sleep 0.1; done
url=$(head -1 "$work/url")
crawl() { # crawl LABEL [flags]: sets tput (raw MB per CPU-s)
  local label=$1; shift
  measure "$label" "$work/wayside" crawl --quiet --delay 0 --parallel "$PARALLEL" --max-pages 0 --warc-dir "$work/$label" "$@" "$url"
  local r
  r=$(cat "$work/$label"/*.warc.gz | gzip -dc | wc -c)
  tput=$(awk -v r="$r" -v c="$cpu" 'BEGIN { printf "%.1f", r/1e6/c }')
  printf "  %-26s %6.2f CPU-s  %6.1f raw MB/CPU-s  peak RSS %4d MB  (%.1f raw MB)\n" "$label" "$cpu" "$tput" "$rssmb" "$(awk -v r="$r" 'BEGIN { print r/1e6 }')"
}
crawl crawl-off
off=$tput
crawl crawl-characterize --characterize
on=$tput
grep characterized "$work/crawl-characterize.out" | sed 's/^ */  /'
awk -v off="$off" -v on="$on" 'BEGIN { printf "  throughput with characterization: %.1f%% lower (target: at most 30%%)\n", (1 - on/off) * 100 }'
