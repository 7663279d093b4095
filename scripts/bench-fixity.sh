#!/usr/bin/env bash
# Replay-fixity benchmarks (needs Chromium; uses ../shared's pywb-iana WARC
# when present, else the built-in test site):
#   - BenchmarkPageLoad: bare page load (fresh incognito tab in a browser
#     without the scope proxy, navigate, same quiet-period wait) vs a full
#     fixity replay (interception, scope proxy, bodies, raw id_ fetches,
#     hashing) of the same memento, alternated; reports bare-ms, fixity-ms
#     and overhead-%.
#   - BenchmarkSweep: sweep throughput (mementos/min) with 1, 2 and 4 pages at
#     once, and peak memory of the test process plus its Chromium children
#     (summed RSS, which counts pages shared between Chromium processes once
#     per process, and summed PSS, the fair total).
#   - BenchmarkSweepEvidence: sweep throughput and disk per memento with
#     evidence retention off (none) and on (keep-all), alternated in the
#     same run; reports none-/keep-all-mementos/min, KiB/memento of each
#     store, the time overhead of keeping evidence and evidence KiB/memento.
# Usage: scripts/bench-fixity.sh
#   short (default, about 1 minute): PAGELOADS=3x SWEEPS=1x EVIDENCE=1x, sweeps of
#     SWEEP_PAGES=8 and EVIDENCE_PAGES=4 pages
#   LONG=1: 10x, 3x, 3x, sweeps of 16 and 8 pages
# Each benchmark is compiled once and bounded by TIMEOUT (default 10m).
# Stopped (Ctrl-C, timeout), it prints the figures measured so far.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/benchlib.sh
LONG=${LONG:-}
export WAYSIDE_BENCH_SWEEP_PAGES=${SWEEP_PAGES:-$(bench_long 16 8)}
export WAYSIDE_BENCH_EVIDENCE_PAGES=${EVIDENCE_PAGES:-$(bench_long 8 4)}
work=$(mktemp -d)
: >"$work/bench.log"

summary() {
	awk -v step="$_bench_step" '/^Benchmark/ { name = $1; sub(/-[0-9]+$/, "", name)
			for (i = 3; i < NF; i++) if ($(i + 1) ~ /[a-zA-Z%]/) v[name, $(i + 1)] = $i }
		END {
			out = ""
			if (("BenchmarkPageLoad", "fixity-ms") in v)
				out = sprintf("fixity replay/bare page load %.2f (%s vs %s ms)", v["BenchmarkPageLoad", "fixity-ms"] / v["BenchmarkPageLoad", "bare-ms"],
					v["BenchmarkPageLoad", "fixity-ms"], v["BenchmarkPageLoad", "bare-ms"])
			for (p = 1; p <= 4; p *= 2) { k = "BenchmarkSweep/parallel=" p
				if ((k, "mementos/min") in v) printf "  sweep, %d page(s) at once: %s mementos/min, peak PSS %s MB, peak RSS %s MB\n", p, v[k, "mementos/min"], v[k, "peak-PSS-MB"], v[k, "peak-RSS-MB"] }
			a = "BenchmarkSweep/parallel=1"; b = "BenchmarkSweep/parallel=4"
			if (((a, "mementos/min") in v) && ((b, "mementos/min") in v))
				out = out (out == "" ? "" : "; ") sprintf("sweep 4 pages at once/1: %.2f", v[b, "mementos/min"] / v[a, "mementos/min"])
			e = "BenchmarkSweepEvidence"
			if ((e, "none-mementos/min") in v)
				out = out (out == "" ? "" : "; ") sprintf("keep-all/no evidence throughput %.2f, %s evidence KiB/memento", v[e, "keep-all-mementos/min"] / v[e, "none-mementos/min"], v[e, "evidence-KiB/memento"])
			printf "bench-fixity ratio: %s\n", (out == "" ? "nothing measured yet (" step ")" : out)
		}' "$work/bench.log"
}
cleanup() { rm -rf "$work"; }
bench_exit_hooks bench-fixity summary cleanup

echo "bench-fixity: $(bench_long long short) form: sweeps of $WAYSIDE_BENCH_SWEEP_PAGES pages, evidence sweeps of $WAYSIDE_BENCH_EVIDENCE_PAGES"
bench_step "building the benchmarks"
go test -c -o "$work/fixity.test" ./fixity/
cd fixity # the benchmarks find their test data relative to the package
bench_step "running BenchmarkPageLoad (with Chromium's start)"
"$work/fixity.test" -test.run '^$' -test.bench 'BenchmarkPageLoad' -test.benchtime "${PAGELOADS:-$(bench_long 10x 3x)}" -test.count 1 -test.timeout "${TIMEOUT:-10m}" | tee -a "$work/bench.log"
bench_step "running BenchmarkSweep"
"$work/fixity.test" -test.run '^$' -test.bench 'BenchmarkSweep$' -test.benchtime "${SWEEPS:-$(bench_long 3x 1x)}" -test.count 1 -test.timeout "${TIMEOUT:-10m}" | tee -a "$work/bench.log"
bench_step "running BenchmarkSweepEvidence"
"$work/fixity.test" -test.run '^$' -test.bench 'BenchmarkSweepEvidence' -test.benchtime "${EVIDENCE:-$(bench_long 3x 1x)}" -test.count 1 -test.timeout "${TIMEOUT:-10m}" | tee -a "$work/bench.log"
