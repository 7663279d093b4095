#!/usr/bin/env bash
# Benchmarks the Redis Cluster dedup index (dedupindex/redis) on a real
# 3-master + 3-replica cluster started on loopback (appendonly, appendfsync
# always, the settings dedupindex/redis/doc.go recommends):
#   - memory per original: INFO used_memory (and used_memory_dataset) deltas
#     over the masters after loading ENTRIES realistic originals in the
#     layouts of earlier versions (1: one hash per digest, JSON; 2: buckets
#     with varint values) and in this one (3: packed values), with and
#     without the by-URL index, plus a MEMORY USAGE breakdown by kind of
#     key and the bytes each field of a stored original takes in layouts
#     2 and 3 (loads run with appendfsync everysec: memory does not depend
#     on it);
#   - Claim calls per second, unpipelined, from CLIENTS processes with CONNS
#     connections each (new digests: a pending claim is written; committed
#     digests: the original is read), with claims starting as the index
#     chooses (adaptive), always with the claim script (as before the read
#     path) and always with an HGET, under appendfsync always and everysec,
#     and redis-benchmark SET/GET with as many connections on the same
#     cluster in the same run as the floor (ratios).
#
# Usage: scripts/bench-redis.sh [ENTRIES]   (default 100000, minutes; LONG=1: 1000000)
#   WAYSIDE_BENCH_SECONDS=10 WAYSIDE_BENCH_CLIENTS=4 WAYSIDE_BENCH_CONNS=16 scripts/bench-redis.sh
# Needs redis-server and redis-benchmark (apt-get install redis-server).
set -euo pipefail
cd "$(dirname "$0")/.."
LONG=${LONG:-}
export WAYSIDE_BENCH_ENTRIES=${1:-$([ -n "$LONG" ] && echo 1000000 || echo 100000)}
export WAYSIDE_BENCH_SECONDS=${WAYSIDE_BENCH_SECONDS:-$([ -n "$LONG" ] && echo 10 || echo 3)}
work=$(mktemp -d)
# Each result line is printed as the benchmark prints it, so a run that is
# stopped (Ctrl-C, timeout) still shows what it measured; the trap says so.
trap 'rm -rf "$work"' EXIT
trap 'echo "bench-redis: interrupted; the lines above are what was measured" >&2; exit 130' INT TERM
go test -c -o "$work/redis.test" ./dedupindex/redis
cd "$work"
for bench in BenchmarkMemory BenchmarkClaims; do
  if ! ./redis.test -test.run '^$' -test.bench "^$bench\$" -test.benchtime 1x -test.timeout 2h 2>&1 | tee "$bench.log" | grep --line-buffered '^bench-redis'; then
    cat "$bench.log" >&2
    exit 1
  fi
done
