#!/usr/bin/env bash
# Benchmarks reading WARC records from S3-compatible object storage against
# reading them from local disk (not a test): prints figures, each S3 one as
# a ratio to the local one measured in the same run.
#
#   scripts/bench-s3.sh [seconds] [workers]     (throughput phase: default 10 s, 4 workers)
#
# A real SeaweedFS (`weed server -s3`, built and cached by
# scripts/seaweedfs.sh) runs on loopback with a fresh data directory. The
# real-world WARC files of ../shared/corpus/warc (WARCS=... to use others)
# are uploaded to it; scripts/s3bench indexes their captures twice (by base
# name: local disk; by s3:// location: the bucket) and serves each index
# with Wayside's replay handler on loopback, then measures:
#
# 1. id_ fetch latency: every response capture fetched in turn, three
#    rounds, p50 and p99 (each record read by range from SeaweedFS vs
#    pread from the local file);
# 2. replay throughput: concurrent keep-alive clients fetching random
#    captures by rewritten replay, MB/s and requests/s.
#
# Every S3 answer is first checked byte-equal to the local one. Client,
# replay handlers and SeaweedFS share the machine's CPUs.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
workers=${2:-4}
SHARED=${SHARED:-../shared}
work=$(mktemp -d /tmp/wayside-bench-s3.XXXXXX)
pid=
trap '[ -n "$pid" ] && { kill -- -"$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$work"' EXIT

weed=${WAYSIDE_SEAWEEDFS_BIN:-$(scripts/seaweedfs.sh)}
go build -o "$work/s3bench" ./scripts/s3bench
# shellcheck disable=SC2206
warcs=(${WARCS:-$SHARED/corpus/warc/*.warc.gz})

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
s3p=$(free_port); mp=$(free_port); vp=$(free_port); fp=$(free_port)
export AWS_ACCESS_KEY_ID=benchaccess AWS_SECRET_ACCESS_KEY=benchsecretkey0123456789
cat > "$work/s3.json" <<JSON
{"identities":[{"name":"bench","credentials":[{"accessKey":"$AWS_ACCESS_KEY_ID","secretKey":"$AWS_SECRET_ACCESS_KEY"}],"actions":["Admin","Read","Write","List","Tagging"]}]}
JSON
mkdir -p "$work/data"
setsid "$weed" server -dir="$work/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
  -master.port="$mp" -volume.port="$vp" -filer.port="$fp" \
  -s3 -s3.port="$s3p" -s3.config="$work/s3.json" \
  -master.volumeSizeLimitMB=64 -volume.max=20 >"$work/weed.log" 2>&1 &
pid=$!
endpoint=http://127.0.0.1:$s3p
# Wait (bounded) until the S3 gateway answers.
for _ in $(seq 600); do
  curl -s -o /dev/null "$endpoint" && break
  sleep 0.2
done
# The gateway may answer before its filer is ready: s3bench retries the
# bucket creation.
ok=
for _ in $(seq 60); do
  if "$work/s3bench" "$endpoint" "$secs" "$workers" "${warcs[@]}" >"$work/out" 2>"$work/err"; then ok=1; break; fi
  grep -q "bucket" "$work/err" || break
  sleep 1
done
cat "$work/out"
[ -n "$ok" ] || { cat "$work/err" >&2; tail -20 "$work/weed.log" >&2; exit 1; }
echo "seaweedfs CPU: $(awk -v t="$(getconf CLK_TCK)" '{printf "%.1f s", ($14+$15)/t}' "/proc/$pid/stat")"
