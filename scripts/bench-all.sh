#!/usr/bin/env bash
# bench-all.sh — every benchmark beside its peer and floor, in one run, one
# table: task, Wayside, peer, floor, the ratios, max RSS, and the CPU model.
#
# Measured here, on warcgen WARCs of SIZE_MB MiB raw (1×) and 4× that,
# each command under /usr/bin/time (raw MB per CPU-second of user+sys,
# so a shared, loaded machine changes the figures less than wall time
# would; ratios are of figures from the same run):
#   dedup      `wayside dedup run -j 1` | warchaeology `warc dedup`
#              ($WARCHAEOLOGY, a built `warc`: `go build` in a checkout of
#              github.com/nlnwa/warchaeology; its HEAD, on gowarc v3.1.0,
#              builds from the module proxy) |
#              floors: gunzip + SHA-1 (scripts/dedupbench floor), with
#              libdeflate ("ld", the inflater Wayside uses) and with
#              klauspost/compress ("go", the pure-Go floor issue 27 set its
#              targets against): the floor cell gives both, the ratios
#              cell Wayside's ratio to each ("floor ld X go Y")
#   cdxj       `wayside cdxj -j 1` | warcio.js `cdx-index` (installed by
#              scripts/interop-js.sh) | the same floors; both take declared
#              payload digests as written, and a `cdxj --verify` row follows
#              (every block and every payload hashed: twice the floor's
#              SHA-1 for HTTP records, so below the floor by design)
# and, for each, a growth row from the same figures: CPU-seconds at 4× over
# 1× (target: the input ratio ±10%) and max RSS at 4× over 1× (target: flat,
# ≤ 1.20), Wayside's beside the peer's and the libdeflate floor's.
# Then every other bench script, each bounded by `timeout SCRIPT_TIMEOUT`
# (default 300 s) in its short form (LONG=1 is passed on for the long
# forms); the table gives its status and wall time, and its ratio line:
# the last "bench-NAME ratio: ..." line it printed (scripts sourcing
# scripts/benchlib.sh print one at exit, stopped or not), else the last line
# naming a ratio. Its full output is in the log directory. The last line
# of the table names the scripts that timed out.
# A peer or tool that cannot be had makes its cell say so; the run goes on.
#
#   scripts/bench-all.sh                     # short: SIZE_MB=48, minutes
#   LONG=1 scripts/bench-all.sh              # long: SIZE_MB=390, the scripts' long forms
#   ONLY="dedup cdxj" scripts/bench-all.sh   # some rows only (names as in the table)
#   REPS=3 SCRIPT_TIMEOUT=600 WARCHAEOLOGY=/path/warc scripts/bench-all.sh
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/benchlib.sh
LONG=${LONG:-}
SIZE_MB=${SIZE_MB:-$([ -n "$LONG" ] && echo 390 || echo 48)}
REPS=${REPS:-1}
SCRIPT_TIMEOUT=${SCRIPT_TIMEOUT:-$([ -n "$LONG" ] && echo 7200 || echo 300)}
SHARED=${SHARED:-../shared}
ONLY=${ONLY:-dedup cdxj crawl crawl-small sidecar access aggregate arc mementomap characterize fixity redis index}
DATA=${BENCH_DIR:-/tmp/wayside-bench-all}
want() { [[ " $ONLY " == *" $1 "* ]]; }

command -v /usr/bin/time >/dev/null || { echo "bench-all: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
mkdir -p "$DATA"
work=$(mktemp -d)
logs=$DATA/logs-$(date -u +%Y%m%dT%H%M%S)
mkdir -p "$logs"
table=$work/table
cleanup() {
	# Interrupted or not, print what was measured.
	if [ -s "$table" ]; then
		print_table
	fi
	rm -rf "$work"
}
print_table() {
	echo
	echo "CPU: $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
	printf '%-28s | %-26s | %-30s | %-24s | %-34s | %s\n' task wayside peer "floor (ld, go)" ratios "max RSS MB (wayside/peer)"
	printf -- '-%.0s' {1..174}
	echo
	while IFS=$'\t' read -r task w p f r rss; do
		if [ -n "$rss" ]; then
			printf '%-28s | %-26s | %-30s | %-24s | %-34s | %s\n' "$task" "$w" "$p" "$f" "$r" "$rss"
		else # a script's row: its ratio line is long, and last
			printf '%-28s | %-26s | %-30s | %-24s | %s\n' "$task" "$w" "$p" "$f" "$r"
		fi
	done <"$table"
	if [ -s "$work/timeouts" ]; then
		echo "timed out (the row shows what the script measured before): $(tr '\n' ' ' <"$work/timeouts")"
	else
		echo "timed out: none"
	fi
	echo "logs: $logs"
}
trap cleanup EXIT
# A script runs in the background (its own process group, under timeout):
# a stop reaches it through timeout, which passes SIGTERM on to the
# script's group; its row records what it printed before.
running="" running_name=""
stop() {
	echo "bench-all: interrupted" >&2
	if [ -n "$running" ]; then
		kill -TERM "$running" 2>/dev/null
		wait "$running"
		finish_row "$running_name" "stopped (bench-all interrupted)"
	fi
	exit 130
}
trap stop INT TERM
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$table"; }

# measure OUT CMD...: runs CMD, prints "MB/CPU-s RSS-MB" for $raw bytes
# raw, or "failed"/"timeout"; stdout and stderr go to OUT.
measure() {
	local out=$1 tf=$work/time
	shift
	best=""
	for _ in $(seq "$REPS"); do
		timeout "$SCRIPT_TIMEOUT" /usr/bin/time -f '%U %S %M' -o "$tf" "$@" >"$out" 2>&1
		local rc=$?
		[ $rc -eq 124 ] && { basename "$out" .log >>"$work/timeouts"; echo timeout; return; }
		[ $rc -ne 0 ] && { echo failed; return; }
		read -r u s m <"$tf"
		local v
		v=$(awk -v raw="$raw" -v u="$u" -v s="$s" -v m="$m" 'BEGIN { printf "%.1f %.0f", raw/1e6/(u+s), m/1024 }')
		# The best of REPS: the run the shared machine disturbed least.
		if [ -z "$best" ] || awk -v a="${v%% *}" -v b="${best%% *}" 'BEGIN { exit !(a > b) }'; then best=$v; fi
	done
	echo "$best"
}
rss() { [[ "$1" == *" "* ]] && echo "${1#* }" || echo -; }
ratio() { bench_ratio "$@"; }
# cpus RATE: CPU-seconds of $raw bytes measured at RATE MB/CPU-s ("" if none).
cpus() { awk -v raw="$raw" -v r="${1%% *}" 'BEGIN { if (r + 0 > 0) printf "%.3f", raw / 1e6 / r }'; }
declare -A cpu mem raws
# keep TASK SCALE FIGURES: remembers a measurement's CPU-seconds and RSS for the growth rows.
keep() { cpu[$1,$2]=$(cpus "$3"); mem[$1,$2]=$(rss "$3"); }
# grown WHO [PREFIX]: "PREFIX CPU ×a, RSS ×b" of WHO at 4× over 1×, or "-".
grown() {
	local c r
	c=$(ratio "${cpu[$1,4]:-}" "${cpu[$1,1]:-}") r=$(ratio "${mem[$1,4]:-}" "${mem[$1,1]:-}")
	[ "$c" = - ] && { echo -; return; }
	echo "${2:-}CPU ×$c, RSS ×$r"
}
# growth TASK LABEL PEER: the 4×/1× row of TASK, Wayside beside peer and floor.
growth() {
	local t=$1 in c r verdict
	[ -n "${cpu[$t,1]:-}" ] && [ -n "${cpu[$t,4]:-}" ] || return 0
	in=$(ratio "${raws[4]}" "${raws[1]}")
	c=$(ratio "${cpu[$t,4]}" "${cpu[$t,1]}") r=$(ratio "${mem[$t,4]}" "${mem[$t,1]}")
	verdict=$(awk -v c="$c" -v i="$in" -v r="$r" 'BEGIN {
		printf "CPU/input %.2f %s; RSS %s", c / i, (c / i >= 0.9 && c / i <= 1.1) ? "ok" : "MISSED", (r <= 1.20) ? "flat" : "GROWS" }')
	row "$2 4×/1× growth" "CPU ×$c (input ×$in)" "$(grown "$t-peer" "$3 ")" "$(grown floor)" "$verdict" "×$r/×$(ratio "${mem[$t-peer,4]:-}" "${mem[$t-peer,1]:-}")"
}

warc() { # warc SCALE: the warcgen WARC of SCALE × SIZE_MB
	local f=$DATA/warcgen-$(($1 * SIZE_MB)).warc.gz
	if [ ! -s "$f" ]; then
		echo "bench-all: generating $f" >&2
		(cd "$SHARED/tools/warcgen" && go run . -o "$f" -size-mb "$(($1 * SIZE_MB))") >/dev/null || return 1
	fi
	echo "$f"
}

echo "bench-all: building" >&2
go build -o "$work/wayside" ./cmd/wayside || exit 1
go build -o "$work/dedupbench" ./scripts/dedupbench || exit 1
jsdir=$(scripts/interop-js.sh 2>"$logs/interop-js.log") || jsdir=""
warciojs=""
[ -n "$jsdir" ] && [ -x "$jsdir/node_modules/.bin/warcio" ] && warciojs=$jsdir/node_modules/.bin/warcio

for scale in 1 4; do
	want dedup || want cdxj || break
	w=$(warc $scale) || { row "warcgen ${scale}×" "failed to generate" - - - -; continue; }
	raw=$(gzip -dc "$w" | wc -c)
	raws[$scale]=$raw
	label="$((raw / 1000000)) MB raw"
	floor=$(measure "$logs/floor-$scale.log" "$work/dedupbench" floor "$w")
	floorgo=$(measure "$logs/floor-go-$scale.log" "$work/dedupbench" floor -inflater klauspost "$w")
	keep floor $scale "$floor"
	fcell="ld ${floor% *} go ${floorgo% *}"
	if want dedup; then
		rm -rf "$work/out"
		ws=$(measure "$logs/dedup-$scale.log" "$work/wayside" dedup run -q -j 1 -o "$work/out" "$w")
		if [ -n "${WARCHAEOLOGY:-}" ] && [ -x "$WARCHAEOLOGY" ]; then
			rm -rf "$work/wa" "$work/widx"
			mkdir -p "$work/wa"
			ps=$(measure "$logs/warchaeology-$scale.log" "$WARCHAEOLOGY" dedup --one-to-one -w "$work/wa" --index-dir "$work/widx" -K "$(readlink -f "$w")")
			pn="warchaeology ${ps% *}"
		else
			ps="" pn="warchaeology: not installed (WARCHAEOLOGY=)"
		fi
		keep dedup $scale "$ws"
		keep dedup-peer $scale "$ps"
		row "dedup run ${scale}× ($label)" "${ws% *} MB/CPU-s" "$pn" "$fcell" \
			"peer $(ratio "${ws% *}" "${ps% *}") floor ld $(ratio "${ws% *}" "${floor% *}") go $(ratio "${ws% *}" "${floorgo% *}")" "$(rss "$ws")/$(rss "$ps")"
		rm -rf "$work/out" "$work/wa" "$work/widx"
	fi
	if want cdxj; then
		ws=$(measure "$logs/cdxj-$scale.log" "$work/wayside" cdxj -q -j 1 --overwrite -o "$work/idx.cdxj" "$w")
		if [ -n "$warciojs" ]; then
			ps=$(measure "$logs/warciojs-$scale.log" "$warciojs" cdx-index "$(readlink -f "$w")")
			# It exits 0 having skipped what it could not read: no lines, no figure.
			if grep -q '^Skipping' "$logs/warciojs-$scale.log" || [ ! -s "$logs/warciojs-$scale.log" ]; then ps=failed; fi
			pn="warcio.js ${ps% *}"
		else
			ps="" pn="warcio.js: not installed (interop-js.sh failed)"
		fi
		keep cdxj $scale "$ws"
		keep cdxj-peer $scale "$ps"
		row "cdxj ${scale}× ($label)" "${ws% *} MB/CPU-s" "$pn" "$fcell" \
			"peer $(ratio "${ws% *}" "${ps% *}") floor ld $(ratio "${ws% *}" "${floor% *}") go $(ratio "${ws% *}" "${floorgo% *}")" "$(rss "$ws")/$(rss "$ps")"
		# cdxj takes declared payload digests as written (as the peer
		# does); --verify hashes every block and every payload (twice
		# the floor's SHA-1 for an HTTP record).
		wv=$(measure "$logs/cdxj-verify-$scale.log" "$work/wayside" cdxj -q -j 1 --verify --overwrite -o "$work/idx.cdxj" "$w")
		row "cdxj --verify ${scale}× ($label)" "${wv% *} MB/CPU-s" "-" "$fcell" \
			"floor ld $(ratio "${wv% *}" "${floor% *}") go $(ratio "${wv% *}" "${floorgo% *}")" "$(rss "$wv")/-"
		rm -f "$work/idx.cdxj"
	fi
done
want dedup && growth dedup "dedup run" warchaeology
want cdxj && growth cdxj "cdxj" warcio.js

# script NAME CMD...: runs a bench script bounded in time; the row carries
# its status, wall time and ratio line (see the header).
script() {
	local name=$1
	shift
	want "$name" || return 0
	echo "bench-all: $name: $*" >&2
	local start=$SECONDS rc
	# Without --foreground, timeout signals the script's whole process
	# group: nothing it started (servers, test binaries) outlives it.
	timeout -k 10 "$SCRIPT_TIMEOUT" "$@" >"$logs/$name.log" 2>&1 &
	running=$! running_name=$name
	wait "$running"
	rc=$?
	running=""
	case $rc in
	0) st="ok $((SECONDS - start)) s" ;;
	124 | 137)
		st="TIMEOUT ${SCRIPT_TIMEOUT}s"
		echo "$name" >>"$work/timeouts"
		;;
	*) st="failed, exit $rc (see log)" ;;
	esac
	finish_row "$name" "$st"
}
# The figures of scripts that print no "bench-NAME ratio:" line and whose
# last line naming a ratio is not their headline: lines joined with "; ".
declare -A figures=(
	[sidecar]='^lookups [0-9]+ in |^latency p50|^ingest: '
	[aggregate]='^requests .* avoided|^recall '
)
# finish_row NAME STATUS: the row of a script from its log.
finish_row() {
	local log=$logs/$1.log last
	last=$(grep -aE "^bench-$1 ratio: " "$log" | tail -1)
	last=${last#bench-"$1" ratio: }
	if [ -z "$last" ] && [ -n "${figures[$1]:-}" ]; then
		last=$(grep -aE "${figures[$1]}" "$log" | tr -s ' \t' ' ' | paste -sd';' - | sed 's/;/; /g')
	fi
	[ -n "$last" ] || last=$(grep -aiE '\bratios?\b| / |×|after/' "$log" | tail -1)
	[ -n "$last" ] || last=$(grep -aiE ' vs |per CPU|cpu-s' "$log" | tail -1)
	last=$(printf '%s' "$last" | tr -s ' \t' ' ' | cut -c1-240)
	row "$1 (script)" "$2" - - "${last:-no ratio line}" ""
}
short() { [ -z "$LONG" ] && echo "$1" || echo "$2"; }

script crawl env REPS="$(short 1 5)" PAGES="$(short 100 400)" scripts/bench-crawl.sh
if want crawl-small; then script crawl-small env REPS="$(short 1 3)" WARC="$(warc 1)" scripts/bench-crawl-small.sh; fi
script sidecar scripts/bench-sidecar.sh
script access scripts/bench-access.sh
script aggregate scripts/bench-aggregate.sh
script arc env SIZE_MB="$(short 40 150)" scripts/bench-arc.sh
# These take LONG themselves (their short forms are their defaults); the
# WARC they read is the 1× one above.
script mementomap env LONG="$LONG" scripts/bench-mementomap.sh
if want characterize; then script characterize env LONG="$LONG" WARC="$(warc 1)" scripts/bench-characterize.sh; fi
script fixity env LONG="$LONG" scripts/bench-fixity.sh
script redis env LONG="$LONG" scripts/bench-redis.sh
if want index; then
	script index env LONG="$LONG" WAYSIDE_BENCH_BYURL=true WAYSIDE_BENCH_DIR="$DATA/index" WAYSIDE_BENCH_WARC="$(warc 1)" scripts/bench-index.sh
fi
