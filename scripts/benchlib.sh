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
