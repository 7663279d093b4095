#!/usr/bin/env bash
# bench-dedup.sh — `wayside dedup run` (byte verification, fast validation,
# -j 1) at 1× and 4× input: raw (uncompressed) MB per CPU-second (user+sys
# of the process), size saving and max RSS, for this tree and for an
# earlier commit, beside the gunzip+SHA-1 floor and, when it is built,
# warchaeology, all in the same run, with the same-run ratios and the
# growth from 1× to 4× (CPU and RSS).
#
#   after     this tree's wayside
#   before    wayside built from BEFORE (default main; "" skips it)
#   floor-go  gunzip + SHA-1 of every byte in Go (scripts/dedupbench: the
#             inflater Wayside uses, reading the file mapped)
#   warchaeology  `warc dedup --one-to-one` when $WARCHAEOLOGY names a built
#             `warc` binary (default /tmp/perfbench/warc when present;
#             commit 620525a, the last one on gowarc v1.6.0, builds)
#
# Each is run REPS times (default 3) per file, alternating, as the machine
# is shared; it prints every run, the median of each and the ratios.
# Targets (issue 27): after >= 150 raw MB per CPU-second and >= 2.5×
# warchaeology at 1× and 4×, max RSS <= 256 MB and flat from 1× to 4×.
#
#   scripts/bench-dedup.sh       # the shared bench inputs (/tmp/wayside-bench-all), else generated
#   WARCS="/path/1x.warc.gz /path/4x.warc.gz" WARCHAEOLOGY=/path/warc BEFORE=HEAD~5 REPS=5 scripts/bench-dedup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared}
REPS=${REPS:-3}
BEFORE=${BEFORE-main}
if [ -z "${WARCHAEOLOGY+x}" ] && [ -x /tmp/perfbench/warc ]; then WARCHAEOLOGY=/tmp/perfbench/warc; fi
if [ -z "${WARCS:-}" ]; then
	if [ -f /tmp/wayside-bench-all/warcgen-48.warc.gz ] && [ -f /tmp/wayside-bench-all/warcgen-192.warc.gz ]; then
		WARCS="/tmp/wayside-bench-all/warcgen-48.warc.gz /tmp/wayside-bench-all/warcgen-192.warc.gz"
	else
		WARCS="/tmp/bench-48.warc.gz /tmp/bench-192.warc.gz"
		for s in 48 192; do
			[ -f "/tmp/bench-$s.warc.gz" ] && continue
			echo "bench-dedup: generating /tmp/bench-$s.warc.gz with $SHARED/tools/warcgen" >&2
			(cd "$SHARED/tools/warcgen" && go run . -size-mb "$s" -o "/tmp/bench-$s.warc.gz")
		done
	fi
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
touch "$work/results"

# measure FILE-LABEL NAME OUTFILE CMD...: runs CMD under /usr/bin/time and
# appends "LABEL NAME MB/CPU-s saving% RSS-MB CPU-s" to results (saving "-"
# without OUTFILE).
measure() {
	local label=$1 name=$2 out=$3
	shift 3
	/usr/bin/time -f '%U %S %M' -o "$work/time" "$@" >"$work/stdout-$name" 2>"$work/stderr-$name" || {
		echo "bench-dedup: $name failed on $label:" >&2
		cat "$work/stderr-$name" >&2
		exit 1
	}
	local saving=-
	[ -n "$out" ] && saving=$(awk -v inb="$in" -v outb="$(stat -c %s "$out")" 'BEGIN { printf "%.1f", 100*(1-outb/inb) }')
	read -r u s m <"$work/time"
	awk -v label="$label" -v name="$name" -v raw="$raw" -v u="$u" -v s="$s" -v m="$m" -v sav="$saving" 'BEGIN {
	  printf "  %-13s CPU %.2f s (user %.2f + sys %.2f): %6.1f raw MB per CPU-second, saving %s%%, max RSS %.0f MB\n", name, u+s, u, s, raw/1e6/(u+s), sav, m/1024
	  printf "%s %s %f %s %f %f\n", label, name, raw/1e6/(u+s), sav, m/1024, u+s >> "'"$work/results"'" }'
}

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); $REPS runs each; before = ${BEFORE:-none}; warchaeology = ${WARCHAEOLOGY:-none}"
labels=()
for w in $WARCS; do
	label=$(basename "$w" .warc.gz)
	labels+=("$label")
	raw=$(gzip -dc "$w" | wc -c)
	in=$(stat -c %s "$w")
	echo "$label: $w, $in bytes stored, $(awk -v r="$raw" 'BEGIN { printf "%.1f", r/1e6 }') MB raw"
	for i in $(seq "$REPS"); do
		for bin in before after; do
			[ -x "$work/$bin" ] || continue
			rm -rf "$work/out"
			measure "$label" "$bin" "$work/out/$(basename "$w")" "$work/$bin" dedup run -q -j 1 -o "$work/out" "$w"
		done
		measure "$label" floor-go "" "$work/dedupbench" floor "$w"
		if [ -n "${WARCHAEOLOGY:-}" ]; then
			rm -rf "$work/wa" "$work/widx"
			mkdir -p "$work/wa"
			measure "$label" warchaeology "$work/wa/$(basename "$w")" "$WARCHAEOLOGY" dedup --one-to-one -w "$work/wa" --index-dir "$work/widx" -K "$(readlink -f "$w")"
		fi
	done
	grep -E "revisits|saved" "$work/stdout-after" | sed 's/^/  /' || true
done
# Medians (of MB/CPU-s, CPU-s) and the largest RSS per file and program.
awk '{ k = $1 " " $2; n[k]++; v[k, n[k]] = $3; c[k, n[k]] = $6; sav[k] = $4; if ($5 > rss[k]) rss[k] = $5 }
  END { for (k in n) {
    m = n[k]; for (i = 1; i <= m; i++) { a[i] = v[k, i]; b[i] = c[k, i] }
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) { if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }; if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t } }
    printf "%s %f %s %f %f\n", k, a[int((m+1)/2)], sav[k], rss[k], b[int((m+1)/2)] } }' "$work/results" | sort >"$work/medians"
echo "medians:"
for label in "${labels[@]}"; do
	awk -v l="$label" '$1 == l { m[$2] = $3; printf "  %-16s %-13s %6.1f raw MB per CPU-second (CPU %.2f s), saving %s%%, max RSS %.0f MB\n", $1, $2, $3, $6, $4, $5 }
	  END {
	    if (("after" in m) && ("warchaeology" in m)) printf "  %-16s after/warchaeology %.2f (target 2.5)\n", l, m["after"]/m["warchaeology"]
	    if (("after" in m) && ("floor-go" in m)) printf "  %-16s after/floor-go %.2f\n", l, m["after"]/m["floor-go"]
	    if (("after" in m) && ("before" in m)) printf "  %-16s after/before %.2f\n", l, m["after"]/m["before"]
	  }' "$work/medians"
done
if [ "${#labels[@]}" -ge 2 ]; then
	first=${labels[0]} last=${labels[${#labels[@]}-1]}
	awk -v a="$first" -v b="$last" '$2 == "after" && $1 == a { c1 = $6; r1 = $5 } $2 == "after" && $1 == b { c2 = $6; r2 = $5 }
	  $2 == "warchaeology" && $1 == a { w1 = $6; q1 = $5 } $2 == "warchaeology" && $1 == b { w2 = $6; q2 = $5 }
	  END {
	    printf "growth %s → %s: after CPU ×%.2f, max RSS %.0f → %.0f MB (×%.2f)\n", a, b, c2/c1, r1, r2, r2/r1
	    if (w1 > 0) printf "growth %s → %s: warchaeology CPU ×%.2f, max RSS %.0f → %.0f MB\n", a, b, w2/w1, q1, q2
	  }' "$work/medians"
fi
