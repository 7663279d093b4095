#!/usr/bin/env bash
# Benchmarks the dedup index (dedupindex/pebble) at crawl scale:
#   - builds an ENTRIES-entry index (batched PutBatch, one fsync per 10,000 entries),
#     compacts it and reports bytes on disk per entry (with and without the
#     by-URL index);
#   - dedup decision latency p50/p99 (Deduper.Decide and bare Claim) for present
#     and absent digests, and ByURL lookups;
#   - durable commit latency with 1 and 8 concurrent committers;
#   - import throughput from the warcgen benchmark WARC (records/s, MB per
#     CPU-second), beside the Go gunzip+SHA-1 floor on the same WARC
#     (scripts/dedupbench) as a ratio.
#
# Usage: scripts/bench-index.sh [ENTRIES]
#   short (default, 1-3 minutes; under a minute once the index is built): ENTRIES=1000000,
#     the default layout only (WAYSIDE_BENCH_BYURL=true), the 48 MiB warcgen WARC,
#     2,000,000 warming lookups
#   LONG=1: ENTRIES=10000000, both layouts, the default warcgen WARC (409 MB raw)
# WAYSIDE_BENCH_BYURL=true limits it to the default layout (building each 10M
# variant takes 2-30 minutes depending on load), =false to the other, empty to both; see the header of
# dedupindex/pebble/bench_test.go for the other knobs.
# Built indexes and the WARC are kept in $WAYSIDE_BENCH_DIR (default /tmp/wayside-bench)
# so a second run skips the build. Needs ~3 GB of disk for 10M entries.
# Stopped (Ctrl-C, timeout), it prints the figures measured so far.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/benchlib.sh
LONG=${LONG:-}
entries=${1:-$(bench_long 10000000 1000000)}
export WAYSIDE_BENCH_BYURL=${WAYSIDE_BENCH_BYURL-$(bench_long "" true)}
dir=${WAYSIDE_BENCH_DIR:-/tmp/wayside-bench}
mkdir -p "$dir"
warc=${WAYSIDE_BENCH_WARC:-$dir/$(bench_long bench.warc.gz bench-48.warc.gz)}
log=$(mktemp)

summary() {
	awk -v step="$_bench_step" '/^Benchmark/ { name = $1; sub(/-[0-9]+$/, "", name)
			for (i = 3; i < NF; i++) if ($(i + 1) ~ /[a-zA-Z%]/) v[name, $(i + 1)] = $i }
		/^floor / { floor = $2 }
		function any(pat, unit,   k, s) { for (k in v) { split(k, s, SUBSEP); if (s[1] ~ pat && s[2] == unit) return v[k] } return "" }
		# The default layout (with the by-URL index) when both were measured.
		function find(pat, unit,   r) { r = any("byurl=true.*" pat, unit); return r != "" ? r : any(pat, unit) }
		END {
			out = ""
			imp = find("^BenchmarkImportWARC$", "MB/cpu-s")
			if (imp != "" && floor > 0) out = sprintf("import %s MB/CPU-s = %.2fx the gunzip+SHA-1 floor (%.1f)", imp, imp / floor, floor)
			else if (imp != "") out = sprintf("import %s MB/CPU-s", imp)
			p = find("present=true/decide$", "p99-µs"); a = find("present=false/decide$", "p99-µs")
			if (p != "") out = out (out == "" ? "" : "; ") sprintf("decide p50/p99 %s/%s µs present, %s/%s absent", find("present=true/decide$", "p50-µs"), p, find("present=false/decide$", "p50-µs"), a)
			d = any("^BenchmarkSize/.*byurl=true$", "disk-B/entry")
			if (d == "") d = any("^BenchmarkSize/", "disk-B/entry")
			if (d != "") out = out (out == "" ? "" : "; ") sprintf("%s B/entry on disk", d)
			c = find("committers=8$", "commits/s")
			if (c != "") out = out (out == "" ? "" : "; ") sprintf("%s commits/s (8 committers)", c)
			printf "bench-index ratio: %s\n", (out == "" ? "nothing measured yet (" step ")" : out)
		}' "$log"
}
cleanup() { rm -f "$log"; }
bench_exit_hooks bench-index summary cleanup

echo "bench-index: $(bench_long long short) form: $entries entries in $dir, WARC $warc"
if [ ! -s "$warc" ]; then
  warcgen=../shared/tools/warcgen
  if [ -d "$warcgen" ]; then
    echo "bench-index: generating $warc with warcgen" >&2
    tmp=${warc%.warc.gz}.tmp.warc.gz # warcgen compresses what ends so
    (cd "$warcgen" && go run . -o "$tmp" $(bench_long "" "-size-mb 48"))
    mv "$tmp" "$warc"
    mv "$tmp.stats.json" "$warc.stats.json" 2>/dev/null || true
  fi
fi

bench_step "building the benchmarks"
go test -c -o "$dir/pebble.test" ./dedupindex/pebble
go build -o "$dir/dedupbench" ./scripts/dedupbench
export WAYSIDE_BENCH_DIR="$dir" WAYSIDE_BENCH_ENTRIES="$entries"
[ -s "$warc" ] && export WAYSIDE_BENCH_WARC="$warc"
cd "$dir"
# The import's floor first (quick): stored MB per CPU-second, as the import reports.
if [ -s "$warc" ]; then
  /usr/bin/time -f '%U %S' -o "$log.time" ./dedupbench floor "$warc" >/dev/null
  awk -v size="$(stat -c %s "$warc")" '{ printf "floor %.1f stored MB per CPU-second: gunzip+SHA-1 of the WARC (%.2f CPU-s)\n", size / 1e6 / ($1 + $2), $1 + $2 }' "$log.time" | tee -a "$log"
  rm -f "$log.time"
fi
bench_step "running BenchmarkImportWARC"
./pebble.test -test.run '^$' -test.bench 'BenchmarkImportWARC' -test.benchtime 1x | tee -a "$log"
bench_step "running BenchmarkSize (building the index if it is not in $dir)"
./pebble.test -test.run '^$' -test.bench 'BenchmarkSize' -test.benchtime 1x -test.v | tee -a "$log"
# Warm the block cache to its steady state before timing decisions.
bench_step "running BenchmarkDecision"
WAYSIDE_BENCH_WARM=${WAYSIDE_BENCH_WARM:-2000000} ./pebble.test -test.run '^$' -test.bench 'BenchmarkDecision' -test.benchtime 50000x | tee -a "$log"
bench_step "running BenchmarkCommit"
./pebble.test -test.run '^$' -test.bench 'BenchmarkCommit' -test.benchtime 2000x | tee -a "$log"
