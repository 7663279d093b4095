#!/usr/bin/env bash
# Benchmarks the Redis Cluster dedup index (dedupindex/redis) on a real
# 3-master + 3-replica cluster started on loopback (appendonly, appendfsync
# always, the settings dedupindex/redis/doc.go recommends):
#   - Claim calls per second, unpipelined, from CLIENTS processes with CONNS
#     connections each (new digests: a pending claim is written; committed
#     digests: the original is read), with claims starting as the index
#     chooses (adaptive), always with the claim script (as before the read
#     path) and always with an HGET, under appendfsync always (and everysec
#     in the long form), and redis-benchmark SET/GET with as many
#     connections on the same cluster in the same run as the floor
#     (measured first; every claim figure is printed with its ratio);
#   - memory per original: INFO used_memory (and used_memory_dataset) deltas
#     over the masters after loading ENTRIES realistic originals in the
#     layouts of earlier versions (1: one hash per digest, JSON; 2: buckets
#     with varint values) and in this one (3: packed values), with and
#     without the by-URL index, plus a MEMORY USAGE breakdown by kind of
#     key and the bytes each field of a stored original takes in layouts
#     2 and 3 (loads run with appendfsync everysec: memory does not depend
#     on it).
#
# Usage: scripts/bench-redis.sh [ENTRIES]
#   short (default, about 2 minutes): ENTRIES=100000, 2 s per claim run, appendfsync always,
#     50000 originals loaded for the claims, redis-benchmark -n 100000
#   LONG=1: ENTRIES=1000000, 10 s per claim run, appendfsync always and everysec,
#     100000 originals loaded, redis-benchmark -n 400000
#   WAYSIDE_BENCH_SECONDS, _CLIENTS (4), _CONNS (16), _FSYNC, _LOADED, _PEER_REQUESTS override
#   (dedupindex/redis/bench_test.go).
# Stopped (Ctrl-C, timeout), it prints the figures measured so far.
# Needs redis-server and redis-benchmark (apt-get install redis-server).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/benchlib.sh
LONG=${LONG:-}
export WAYSIDE_BENCH_ENTRIES=${1:-$(bench_long 1000000 100000)}
export WAYSIDE_BENCH_SECONDS=${WAYSIDE_BENCH_SECONDS:-$(bench_long 10 2)}
export WAYSIDE_BENCH_FSYNC=${WAYSIDE_BENCH_FSYNC:-$(bench_long always,everysec always)}
export WAYSIDE_BENCH_LOADED=${WAYSIDE_BENCH_LOADED:-$(bench_long 100000 50000)}
export WAYSIDE_BENCH_PEER_REQUESTS=${WAYSIDE_BENCH_PEER_REQUESTS:-$(bench_long 400000 100000)}
work=$(mktemp -d)

summary() {
	cat "$work"/*.log 2>/dev/null | awk -v step="$_bench_step" '
		/^bench-redis claims/ {
			f = $4; sub(/\):$/, "", f); mode = $5; path = $7
			match($0, /path: [0-9]+ claims\/s = [0-9.]+ x [A-Z]+/)
			split(substr($0, RSTART + 6, RLENGTH - 6), w, " ")
			rate[f, mode, path] = w[1]; r[f, mode, path] = w[4]; floor[mode] = w[6]
		}
		/^bench-redis peer/ { f = $4; sub(/\):$/, "", f); match($0, /SET [0-9]+ requests\/s, GET [0-9]+/); split(substr($0, RSTART, RLENGTH), w, " "); peer[f] = "SET " w[2] "/s, GET " w[5] "/s"; order[++nf] = f }
		/^bench-redis memory:/ { v = $3; sub(/:$/, "", v); match($0, /= [0-9.]+ B per original/); mem[v] = substr($0, RSTART + 2, RLENGTH - 17) }
		END {
			for (i = 1; i <= nf; i++) {
				f = order[i]; line = ""
				for (m = 1; m <= 2; m++) { mode = (m == 1) ? "duplicate" : "new"
					for (p = 1; p <= 3; p++) { path = (p == 1) ? "adaptive" : (p == 2) ? "script" : "read"
						if ((f, mode, path) in rate) line = line sprintf("%s %s %s/s = %s x %s; ", mode, path, rate[f, mode, path], r[f, mode, path], floor[mode]) } }
				printf "  claims (appendfsync %s): %sredis-benchmark %s\n", f, line, peer[f]
			}
			if ("bucketed" in mem) printf "  memory: %s B per original (layout 1: %s, layout 2: %s, without the by-URL index: %s)\n", mem["bucketed"], mem["v1-layout"], mem["v2-layout"], mem["bucketed-no-byurl"]
			f = order[1]; out = ""
			if (("always", "duplicate", "adaptive") in r) out = out sprintf("duplicate claims/GET %s, ", r["always", "duplicate", "adaptive"])
			if (("always", "new", "adaptive") in r) out = out sprintf("new claims/SET %s, ", r["always", "new", "adaptive"])
			if (out != "") out = out "adaptive path, appendfsync always; "
			if ("bucketed" in mem) out = out sprintf("%s B per original", mem["bucketed"])
			if (out == "" && ("always" in peer)) out = "redis-benchmark " peer["always"] " (appendfsync always); no claim run finished"
			if (out == "") out = "nothing measured yet (" step ")"
			printf "bench-redis ratio: %s\n", out
		}'
}
cleanup() { rm -rf "$work"; }
bench_exit_hooks bench-redis summary cleanup

echo "bench-redis: $(bench_long long short) form: ENTRIES=$WAYSIDE_BENCH_ENTRIES SECONDS=$WAYSIDE_BENCH_SECONDS FSYNC=$WAYSIDE_BENCH_FSYNC LOADED=$WAYSIDE_BENCH_LOADED PEER_REQUESTS=$WAYSIDE_BENCH_PEER_REQUESTS"
bench_step "building the benchmarks"
go test -c -o "$work/redis.test" ./dedupindex/redis
cd "$work"
# Claims first: its ratios are the figures bench-all.sh shows.
for bench in BenchmarkClaims BenchmarkMemory; do
	bench_step "running $bench (with the cluster start and loads)"
	if ! ./redis.test -test.run '^$' -test.bench "^$bench\$" -test.benchtime 1x -test.timeout 2h 2>&1 | tee "$bench.log" | grep --line-buffered '^bench-redis'; then
		[ -n "$_bench_stop" ] || cat "$bench.log" >&2
		exit 1
	fi
done
