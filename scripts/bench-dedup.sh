#!/usr/bin/env bash
# bench-dedup.sh — `wayside dedup run` (byte verification, fast validation,
# -j 1) on the default warcgen WARC: raw (uncompressed) MB per CPU-second
# (user+sys of the process), size saving and max RSS, for this tree and for
# an earlier commit, beside two floors and, when it is built, warchaeology,
# all in the same run.
#
#   after     this tree's wayside
#   before    wayside built from BEFORE (default main; "" skips it)
#   floor-go  gunzip + SHA-1 of every byte in Go (scripts/dedupbench: the
#             inflater Wayside uses, reading the file mapped)
#   floor-sh  gzip -dc | sha1sum
#   warchaeology  `warc dedup` when $WARCHAEOLOGY names a built `warc`
#             binary (commit 620525a, the last one on gowarc v1.6.0, builds)
#
# Each is run REPS times (default 3), alternating, as the machine is
# shared; it prints every run, the median of each and the ratios. Targets:
# after >= 150 raw MB per CPU-second, saving >= 35.5%.
#
#   scripts/bench-dedup.sh                  # generates /tmp/bench.warc.gz if missing
#   WARC=/path/file.warc.gz WARCHAEOLOGY=/path/warc BEFORE=HEAD~5 REPS=5 scripts/bench-dedup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
WARC=${WARC:-/tmp/bench.warc.gz}
SHARED=${SHARED:-../shared}
REPS=${REPS:-3}
BEFORE=${BEFORE-main}
if [ ! -f "$WARC" ]; then
	echo "bench-dedup: generating $WARC with $SHARED/tools/warcgen" >&2
	(cd "$SHARED/tools/warcgen" && go run . -o "$WARC")
fi
command -v /usr/bin/time >/dev/null || { echo "bench-dedup: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/after" ./cmd/wayside
go build -o "$work/dedupbench" ./scripts/dedupbench
if [ -n "$BEFORE" ]; then
	mkdir "$work/src-before"
	git archive "$BEFORE" | tar -x -C "$work/src-before"
	(cd "$work/src-before" && go build -o "$work/before" ./cmd/wayside)
fi
raw=$(gzip -dc "$WARC" | wc -c)
in=$(stat -c %s "$WARC")

# measure NAME OUTFILE CMD...: runs CMD under /usr/bin/time and appends
# "NAME MB/CPU-s saving% RSS-MB" to results (saving "-" without OUTFILE).
measure() {
	local name=$1 out=$2
	shift 2
	/usr/bin/time -f '%U %S %M' -o "$work/time" "$@" >"$work/stdout-$name" 2>"$work/stderr-$name" || {
		echo "bench-dedup: $name failed:" >&2
		cat "$work/stderr-$name" >&2
		exit 1
	}
	local saving=-
	[ -n "$out" ] && saving=$(awk -v inb="$in" -v outb="$(stat -c %s "$out")" 'BEGIN { printf "%.1f", 100*(1-outb/inb) }')
	read -r u s m <"$work/time"
	awk -v name="$name" -v raw="$raw" -v u="$u" -v s="$s" -v m="$m" -v sav="$saving" 'BEGIN {
	  printf "%-13s CPU %.2f s (user %.2f + sys %.2f): %6.1f raw MB per CPU-second, saving %s%%, max RSS %.0f MB\n", name, u+s, u, s, raw/1e6/(u+s), sav, m/1024
	  printf "%s %f %s %f\n", name, raw/1e6/(u+s), sav, m/1024 >> "'"$work/results"'" }'
}

echo "file: $WARC, $in bytes stored, $(awk -v r="$raw" 'BEGIN { printf "%.1f", r/1e6 }') MB raw; $REPS runs each; before = ${BEFORE:-none}"
for i in $(seq "$REPS"); do
	for bin in before after; do
		[ -x "$work/$bin" ] || continue
		rm -rf "$work/out"
		measure "$bin" "$work/out/$(basename "$WARC")" "$work/$bin" dedup run -q -j 1 -o "$work/out" "$WARC"
	done
	measure floor-go "" "$work/dedupbench" floor "$WARC"
	measure floor-sh "" sh -c "gzip -dc '$WARC' | sha1sum"
	if [ -n "${WARCHAEOLOGY:-}" ]; then
		rm -rf "$work/w" "$work/widx"
		mkdir -p "$work/w"
		measure warchaeology "$work/w/$(basename "$WARC")" "$WARCHAEOLOGY" dedup --one-to-one -w "$work/w" --index-dir "$work/widx" -K "$WARC"
	fi
done
grep -E "revisits|saved" "$work/stdout-after" || true
echo "medians:"
for name in $(awk '{print $1}' "$work/results" | sort -u); do
	awk -v n="$name" '$1 == n' "$work/results" | sort -k2,2n | awk '{ v[NR] = $2; sav = $3; if ($4 > rss) rss = $4 }
	  END { printf "%s %f %s %f\n", $1, v[int((NR+1)/2)], sav, rss }'
done >"$work/medians"
awk '{ m[$1] = $2; printf "  %-13s %6.1f raw MB per CPU-second, saving %s%%, max RSS %.0f MB\n", $1, $2, $3, $4 }
  END {
    if (("after" in m) && ("before" in m)) printf "  after/before %.2f\n", m["after"]/m["before"]
    if (("after" in m) && ("floor-go" in m)) printf "  after/floor-go %.2f\n", m["after"]/m["floor-go"]
    if (("after" in m) && ("floor-sh" in m)) printf "  after/floor-sh %.2f\n", m["after"]/m["floor-sh"]
    if (("after" in m) && ("warchaeology" in m)) printf "  after/warchaeology %.2f\n", m["after"]/m["warchaeology"]
  }' "$work/medians"
