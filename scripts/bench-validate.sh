#!/usr/bin/env bash
# bench-validate.sh — `wayside validate` and `wayside index delete`, with
# their floors, in the same run:
#
#   validate  raw (uncompressed) MB per CPU-second (user+sys) of `wayside
#             validate` on the warcgen WARC (block and payload digests of
#             every record), beside the floor: gunzip + SHA-1 of every byte
#             in Go (scripts/dedupbench floor, the inflater Wayside uses)
#             and `gzip -dc | sha1sum`; ratios validate/floor.
#   delete    dedupindex/pebble BenchmarkDelete: build an index of ENTRIES
#             (default 1,000,000) realistic originals with durable batches
#             (the floor: writing them), delete them all with one selector;
#             CPU seconds of both, originals deleted per CPU-second, ratio.
#
#   scripts/bench-validate.sh                 # generates /tmp/bench.warc.gz if missing
#   WARC=/path/file.warc.gz ENTRIES=1000000 REPS=1 scripts/bench-validate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
WARC=${WARC:-/tmp/bench.warc.gz}
SHARED=${SHARED:-../shared}
REPS=${REPS:-1}
ENTRIES=${ENTRIES:-1000000}
if [ ! -f "$WARC" ]; then
	echo "bench-validate: generating $WARC with $SHARED/tools/warcgen" >&2
	(cd "$SHARED/tools/warcgen" && go run . -o "$WARC")
fi
command -v /usr/bin/time >/dev/null || { echo "bench-validate: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/wayside" ./cmd/wayside
go build -o "$work/dedupbench" ./scripts/dedupbench
raw=$(gzip -dc "$WARC" | wc -c)

# measure NAME CMD...: CPU seconds (user+sys) of CMD appended to results.
# validate exits 1 when it finds errors: the exit status is not checked.
measure() {
	local name=$1
	shift
	/usr/bin/time -f '%U %S %M' -o "$work/time" "$@" >"$work/stdout-$name" 2>"$work/stderr-$name" || true
	read -r u s m <"$work/time"
	awk -v name="$name" -v raw="$raw" -v u="$u" -v s="$s" -v m="$m" 'BEGIN {
	  printf "%-10s CPU %.2f s: %6.1f raw MB per CPU-second, max RSS %.0f MB\n", name, u+s, raw/1e6/(u+s), m/1024
	  printf "%s %f\n", name, raw/1e6/(u+s) >> "'"$work/results"'" }'
}
echo "file: $WARC, $(awk -v r="$raw" 'BEGIN { printf "%.1f", r/1e6 }') MB raw; $REPS runs each"
for i in $(seq "$REPS"); do
	measure validate "$work/wayside" validate -q "$WARC"
	measure floor-go "$work/dedupbench" floor "$WARC"
	measure floor-sh sh -c "gzip -dc '$WARC' | sha1sum"
done
tail -1 "$work/stdout-validate"
for name in validate floor-go floor-sh; do
	awk -v n="$name" '$1 == n {print $2}' "$work/results" | sort -n | awk -v n="$name" '{ v[NR] = $1 } END { print n, v[int((NR+1)/2)] }'
done >"$work/medians"
awk '{ m[$1] = $2 } END {
  printf "validate/floor-go %.2f, validate/floor-sh %.2f (of the floor'"'"'s MB per CPU-second)\n", m["validate"]/m["floor-go"], m["validate"]/m["floor-sh"] }' "$work/medians"

echo "index delete of $ENTRIES originals (dedupindex/pebble):"
WAYSIDE_BENCH_DELETE_ENTRIES=$ENTRIES go test -run '^$' -bench '^BenchmarkDelete$' -benchtime 1x ./dedupindex/pebble | grep '^BenchmarkDelete'
