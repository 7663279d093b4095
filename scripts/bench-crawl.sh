#!/usr/bin/env bash
# bench-crawl.sh — measure `wayside crawl` throughput in raw WARC megabytes
# written per CPU-second of the crawler process (user+sys), for this tree
# and for an earlier commit, in the same run.
#
# It builds wayside from the working tree ("after") and from BEFORE (default
# 5632995, the last commit before the capture spine: crawler captures built
# by hand, no consumers), and the benchmark site (crawl/sitetest/benchsite),
# which serves PAGES distinct resources of SIZE bytes (half HTML text, half
# binary) on 127.0.0.1 from a separate process. Each binary crawls the site
# into a fresh directory REPS times, alternating; a run's throughput is the
# uncompressed size of the WARC files written (zcat | wc -c) divided by the
# crawler's user+sys CPU time. It prints every run, the median of each and
# the ratio after/before; "after+map" is the same crawl with --live-map.
#
#   scripts/bench-crawl.sh                        # PAGES=400 SIZE=262144 PARALLEL=4 REPS=5
#   BEFORE=HEAD~3 PAGES=1000 SIZE=1048576 scripts/bench-crawl.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PAGES=${PAGES:-400}
SIZE=${SIZE:-262144}
PARALLEL=${PARALLEL:-4}
REPS=${REPS:-5}
BEFORE=${BEFORE:-5632995}
. scripts/benchlib.sh
work=$(mktemp -d)
: >"$work/results"
# summary: medians and ratios of the runs so far (also when stopped).
summary() {
	[ -s "$work/results" ] || { echo "bench-crawl ratio: nothing measured yet ($_bench_step)"; return; }
	awk '
	  { v[$1, ++n[$1]] = $2 }
	  function median(name,   k, i, j, t, a) {
	    k = n[name]; for (i = 1; i <= k; i++) a[i] = v[name, i];
	    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	    return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
	  END {
	    b = median("before"); a = median("after"); m = median("after+map");
	    printf "median (%d runs): before %.1f, after %.1f, after+map %.1f raw MB per CPU-second\n", n["before"], b, a, m;
	    if (b > 0) printf "ratio after/before %.3f, after+map/before %.3f\n", a / b, m / b }' "$work/results" | tee "$work/ratio"
	sed -n 's/^ratio /bench-crawl ratio: /p' "$work/ratio"
}
cleanup() { kill "${site_pid:-}" 2>/dev/null || true; rm -rf "$work"; }
bench_exit_hooks bench-crawl summary cleanup
bench_step building
go build -o "$work/after" ./cmd/wayside
mkdir "$work/src-before"
git archive "$BEFORE" | tar -x -C "$work/src-before"
(cd "$work/src-before" && go build -o "$work/before" ./cmd/wayside)
go build -o "$work/benchsite" ./crawl/sitetest/benchsite
"$work/benchsite" -pages "$PAGES" -size "$SIZE" >"$work/url" &
site_pid=$!
for _ in $(seq 50); do [ -s "$work/url" ] && break; sleep 0.1; done
url=$(head -1 "$work/url")
TIMEFORMAT='%U %S'

# crawl NAME BINARY [FLAGS...]: one crawl; appends "NAME MB/CPU-s" to results.
crawl() {
	local name=$1 bin=$2
	shift 2
	local dir="$work/warcs-$name"
	rm -rf "$dir"
	local cpu
	cpu=$( { time "$bin" crawl --quiet --delay 0 --parallel "$PARALLEL" --max-pages 0 --warc-dir "$dir" "$@" "$url" >"$work/summary-$name" 2>"$work/log-$name"; } 2>&1 )
	local raw
	raw=$(cat "$dir"/*.warc.gz | gzip -dc | wc -c)
	awk -v name="$name" -v cpu="$cpu" -v raw="$raw" 'BEGIN {
	  split(cpu, t, " "); s = t[1] + t[2];
	  printf "%-10s raw %.1f MB, CPU %.2f s (user %.2f + sys %.2f): %.1f raw MB per CPU-second\n", name, raw/1e6, s, t[1], t[2], raw/1e6/s }'
	awk -v name="$name" -v cpu="$cpu" -v raw="$raw" 'BEGIN { split(cpu, t, " "); printf "%s %f\n", name, raw/1e6/(t[1]+t[2]) }' >>"$work/results"
}

bench_step crawling
echo "site: $PAGES resources of $SIZE bytes, --parallel $PARALLEL, $REPS runs each; before = $BEFORE"
for i in $(seq "$REPS"); do
	crawl before "$work/before"
	crawl after "$work/after"
	crawl after+map "$work/after" --live-map "$work/map-$i.ukvs"
done
