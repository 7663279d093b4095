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
	awk -v n="$(grep -c '^before ' "$work/results")" -v b="$(bench_median "$work/results" before)" \
		-v a="$(bench_median "$work/results" after)" -v m="$(bench_median "$work/results" after+map)" 'BEGIN {
	    printf "median (%d runs): before %.1f, after %.1f, after+map %.1f raw MB per CPU-second\n", n, b, a, m;
	    if (b > 0) printf "ratio after/before %.3f, after+map/before %.3f\n", a / b, m / b }' | tee "$work/ratio"
	sed -n 's/^ratio /bench-crawl ratio: /p' "$work/ratio"
}
cleanup() { kill "${site_pid:-}" 2>/dev/null || true; rm -rf "$work"; }
bench_exit_hooks bench-crawl summary cleanup
bench_step building
go build -o "$work/after" ./cmd/wayside
mkdir "$work/src-before"
git archive "$BEFORE" | tar -x -C "$work/src-before"
(cd "$work/src-before" && go build -o "$work/before" ./cmd/wayside)
bench_start_benchsite "$work" "$PAGES" "$SIZE"
site_pid=$bench_site_pid url=$bench_site_url

bench_step crawling
echo "site: $PAGES resources of $SIZE bytes, --parallel $PARALLEL, $REPS runs each; before = $BEFORE"
for i in $(seq "$REPS"); do
	bench_crawl "$work/results" before "$work/before" "$url" "$work/warcs-before"
	bench_crawl "$work/results" after "$work/after" "$url" "$work/warcs-after"
	bench_crawl "$work/results" after+map "$work/after" "$url" "$work/warcs-after+map" --live-map "$work/map-$i.ukvs"
done
