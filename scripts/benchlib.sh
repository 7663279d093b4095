# benchlib.sh — sourced (bash) by the bench scripts: a run that is stopped
# still prints what it measured.
#
# bench_exit_hooks NAME SUMMARY [CLEANUP]: at exit, however it comes (the
# end, an error, Ctrl-C, the SIGTERM of `timeout`), runs the function
# SUMMARY, which prints the figures measured so far (from the files the
# script wrote as it went) and, last, one line "NAME ratio: ..." that
# scripts/bench-all.sh puts in its table; then CLEANUP. A stop is named
# first, with the step it was in, and it exits 130 (interrupted; SIGINT or SIGTERM)
# (bench_step TEXT names the step that starts).
#
# `timeout` and a terminal's Ctrl-C signal the whole process group, so the
# benchmark binaries and servers a script started stop with it; lines they
# printed before are already out (print each figure as it is measured).
bench_exit_hooks() {
	_bench_name=$1 _bench_summary=$2 _bench_cleanup=${3:-:} _bench_stop="" _bench_start=$SECONDS _bench_step="starting"
	trap _bench_at_exit EXIT
	trap '_bench_stop=SIGINT; exit 130' INT
	trap '_bench_stop=SIGTERM; exit 130' TERM
}

_bench_at_exit() {
	local rc=$?
	set +eu
	trap '' INT TERM # a second Ctrl-C must not cut the summary short
	echo
	if [ -n "$_bench_stop" ]; then
		echo "$_bench_name: stopped by $_bench_stop after $((SECONDS - _bench_start)) s, while $_bench_step; what it measured before:"
	elif [ "$rc" -ne 0 ]; then
		echo "$_bench_name: failed (exit $rc) after $((SECONDS - _bench_start)) s, while $_bench_step; what it measured before:"
	else
		echo "$_bench_name: summary ($((SECONDS - _bench_start)) s):"
	fi
	"$_bench_summary"
	"$_bench_cleanup"
	exit "$rc"
}

bench_step() { _bench_step=$1; }

# bench_long LONG-VALUE SHORT-VALUE: the first when LONG is set (the long form).
bench_long() { [ -n "${LONG:-}" ] && echo "$1" || echo "$2"; }

# bench_ratio A B: A/B to 2 decimals, or "-" when either is missing or 0.
bench_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "-" }'; }

# bench_start_benchsite WORK PAGES SIZE: builds the benchmark site
# (crawl/sitetest/benchsite: PAGES distinct resources of SIZE bytes, half
# HTML text, half binary) into WORK and serves it on 127.0.0.1 from a
# process of its own in the background; sets bench_site_pid (for the
# cleanup to kill) and bench_site_url.
bench_start_benchsite() {
	go build -o "$1/benchsite" ./crawl/sitetest/benchsite
	"$1/benchsite" -pages "$2" -size "$3" >"$1/url" &
	bench_site_pid=$!
	for _ in $(seq 50); do [ -s "$1/url" ] && break; sleep 0.1; done
	bench_site_url=$(head -1 "$1/url")
	[ -n "$bench_site_url" ] || { echo "benchsite did not start" >&2; return 1; }
}

# bench_crawl RESULTS NAME BIN URL WARCDIR [FLAGS...]: one `BIN crawl` of
# URL into a fresh WARCDIR (--quiet --delay 0 --parallel $PARALLEL
# --max-pages 0, then FLAGS; its stdout in WARCDIR.summary, its stderr in
# WARCDIR.log): prints the run and appends "NAME MB/CPU-s" to RESULTS, the
# raw (uncompressed: zcat | wc -c) WARC megabytes written per CPU-second
# (user+sys) of the crawler process.
bench_crawl() {
	local results=$1 name=$2 bin=$3 url=$4 dir=$5
	shift 5
	rm -rf "$dir"
	local cpu raw TIMEFORMAT='%U %S'
	cpu=$( { time "$bin" crawl --quiet --delay 0 --parallel "$PARALLEL" --max-pages 0 --warc-dir "$dir" "$@" "$url" >"$dir.summary" 2>"$dir.log"; } 2>&1 )
	raw=$(cat "$dir"/*.warc.gz | gzip -dc | wc -c)
	awk -v name="$name" -v cpu="$cpu" -v raw="$raw" 'BEGIN {
	  split(cpu, t, " "); s = t[1] + t[2];
	  printf "%-10s raw %.1f MB, CPU %.2f s (user %.2f + sys %.2f): %.1f raw MB per CPU-second\n", name, raw/1e6, s, t[1], t[2], raw/1e6/s
	  printf "%s %f\n", name, raw/1e6/s >>"'"$results"'" }'
}

# bench_median FILE NAME: the median of NAME's values in FILE (lines "NAME
# VALUE"); 0 when it has none.
bench_median() {
	awk -v name="$2" '$1 == name { a[++k] = $2 }
	  END {
	    if (!k) { print 0; exit }
	    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	    print (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }' "$1"
}
