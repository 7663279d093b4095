#!/usr/bin/env bash
# bench-crawl-small.sh — the crawl of a site of many small objects, beside
# wget in the same run: CPU seconds (user+sys) of the crawler process per
# crawl, and the ratio Wayside / wget (issue 27: at most 0.35).
#
# The site is scripts/warcsite serving the responses of a warcgen WARC on
# 127.0.0.1 (by default the default warcgen WARC: 9,711 URLs, 340 MB of
# payloads, HTML, CSS, JS, JSON, SVG, images, fonts, some gzip-encoded):
# a root page links index pages of 200 links each, which link every
# resource, so both crawlers fetch exactly root, index pages, resources
# and robots.txt (--depth 2 / -l 2). Wayside: `wayside crawl --delay 0
# --parallel PARALLEL` with its defaults (dedup index, capture index,
# CDXJ, crawl.log, gzip level 6); wget: `wget -r -l 2 --warc-file`
# (gzip, one connection). Each crawler runs REPS times, alternating, into
# fresh directories; medians are printed, with max RSS. BEFORE=COMMIT also
# measures wayside built from that commit in the same run.
#
#   scripts/bench-crawl-small.sh                          # generates the WARC with warcgen (~30 s)
#   WARC=/tmp/bench.warc.gz REPS=5 BEFORE=main scripts/bench-crawl-small.sh
#   SIZE_MB=40 scripts/bench-crawl-small.sh               # a smaller site (warcgen -size-mb)
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
PARALLEL=${PARALLEL:-4}
BEFORE=${BEFORE:-}
WARC=${WARC:-}
SIZE_MB=${SIZE_MB:-}
SHARED=${SHARED:-../shared}
command -v wget >/dev/null || { echo "bench-crawl-small: wget is missing (apt-get install wget)" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "bench-crawl-small: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
. scripts/benchlib.sh
work=$(mktemp -d)
: >"$work/results"
# summary: medians and ratios of the runs so far (also when stopped).
summary() {
	[ -s "$work/results" ] || { echo "bench-crawl-small ratio: nothing measured yet ($_bench_step)"; return; }
	awk -v names="$names" '
	  { v[$1, ++n[$1]] = $2; r[$1, n[$1]] = $3 }
	  function median(a, name, k,   i, j, t, x) {
	    for (i = 1; i <= k; i++) x[i] = a[name, i];
	    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
	    return (k % 2) ? x[(k + 1) / 2] : (x[k / 2] + x[k / 2 + 1]) / 2 }
	  END {
	    split(names, ns, " "); w = median(v, "wget", n["wget"]);
	    if (n["wget"]) printf "median wget    CPU %6.2f s, max RSS %4.0f MB\n", w, median(r, "wget", n["wget"]);
	    for (i = 1; i in ns; i++) { if (ns[i] == "wget" || !n[ns[i]]) continue; c = median(v, ns[i], n[ns[i]]);
	      printf "median %-7s CPU %6.2f s, max RSS %4.0f MB", ns[i], c, median(r, ns[i], n[ns[i]])
	      if (w > 0) printf ", ratio %s/wget %.3f (target <= 0.35)", ns[i], c / w
	      printf "\n" }
	  }' "$work/results" | tee "$work/medians"
	local r
	r=$(sed -n 's/^median \([a-z]*\) .*, ratio \([a-z]*\/wget [0-9.]*\) .*/\2/p' "$work/medians" | paste -sd, - | sed 's/,/, /g')
	echo "bench-crawl-small ratio: CPU ${r:-(no ratio: wget not measured yet)} (target <= 0.35)"
}
cleanup() { kill "${site_pid:-}" 2>/dev/null || true; rm -rf "$work"; }
bench_exit_hooks bench-crawl-small summary cleanup
bench_step building
go build -o "$work/after" ./cmd/wayside
go build -o "$work/warcsite" ./scripts/warcsite
names="after wget"
if [ -n "$BEFORE" ]; then
	mkdir "$work/src-before"
	git archive "$BEFORE" | tar -x -C "$work/src-before"
	(cd "$work/src-before" && go build -o "$work/before" ./cmd/wayside)
	names="before after wget"
fi
if [ -z "$WARC" ]; then
	WARC=$work/site.warc.gz
	(cd "$SHARED/tools/warcgen" && go run . -o "$WARC" ${SIZE_MB:+-size-mb "$SIZE_MB"}) >/dev/null
fi
"$work/warcsite" "$WARC" >"$work/url" 2>"$work/site.log" &
site_pid=$!
for _ in $(seq 600); do [ -s "$work/url" ] && break; sleep 0.1; done
url=$(head -1 "$work/url")
[ -n "$url" ] || { echo "bench-crawl-small: warcsite did not start: $(cat "$work/site.log")" >&2; exit 1; }
echo "site: $(cut -d' ' -f2- "$work/site.log"); --parallel $PARALLEL; $REPS runs each; CPU: $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# crawl NAME: one crawl; prints it and appends "NAME CPU RSS-MB URLs" to results.
crawl() {
	local name=$1 dir=$work/out-$1
	rm -rf "$dir"
	mkdir -p "$dir"
	if [ "$name" = wget ]; then
		(cd "$dir" && /usr/bin/time -f '%U %S %M' -o "$work/time" wget -q -r -l 2 --warc-file=wget -P files "$url") || [ $? -eq 8 ]
		n=$(zcat "$dir/wget.warc.gz" | grep -ac '^WARC-Type: response')
	else
		/usr/bin/time -f '%U %S %M' -o "$work/time" "$work/$name" crawl --quiet --delay 0 --parallel "$PARALLEL" --max-pages 0 --depth 2 \
			--warc-dir "$dir" "$url" >"$work/summary-$name"
		n=$(grep -o 'pages fetched *[0-9]*' "$work/summary-$name" | grep -o '[0-9]*$')
	fi
	read -r u s m < <(tail -1 "$work/time") # after "Command exited with non-zero status" (wget: 8, the 404s)
	awk -v name="$name" -v u="$u" -v s="$s" -v m="$m" -v n="$n" 'BEGIN {
	  printf "%-7s %5d URLs  CPU %6.2f s (user %.2f + sys %.2f)  max RSS %4.0f MB\n", name, n, u + s, u, s, m / 1024
	  printf "%s %f %f %d\n", name, u + s, m / 1024, n >>"'"$work/results"'" }'
}
bench_step crawling
for _ in $(seq "$REPS"); do
	for name in $names; do crawl "$name"; done
done
