#!/usr/bin/env bash
# bench-upload.sh — what uploading to object storage costs a crawl: `wayside
# crawl` throughput in raw WARC megabytes written per CPU-second of the
# crawler process (user+sys), without and with --upload to a real
# S3-compatible server (SeaweedFS, `weed server -s3` on 127.0.0.1), in the
# same run, alternating.
#
# The crawl crawls the benchmark site (crawl/sitetest/benchsite: PAGES
# distinct resources of SIZE bytes, half HTML text, half binary, from a
# separate process). With --upload it also copies every closed WARC file
# and its CDXJ to the bucket and proves each copy by reading it back whole
# (SHA-256 and size) before the local copy may go; --keep-local keeps the
# local files so the raw size can be measured the same way for both (zcat |
# wc -c): removing a file costs nothing next to the copy and the read-back.
# The server's own CPU is not counted (it is another machine in a real
# deployment). It prints every run, the median of each and the ratio
# upload/local (the share of the crawl's CPU efficiency left with uploads).
#
#   scripts/bench-upload.sh                 # PAGES=400 SIZE=262144 PARALLEL=4 REPS=3
#   PAGES=1000 REPS=5 scripts/bench-upload.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PAGES=${PAGES:-400}
SIZE=${SIZE:-262144}
PARALLEL=${PARALLEL:-4}
REPS=${REPS:-3}
weed=${WAYSIDE_SEAWEEDFS_BIN:-$(scripts/seaweedfs.sh)}
. scripts/benchlib.sh
work=$(mktemp -d)
cleanup() {
	kill "${site_pid:-}" 2>/dev/null || true
	[ -n "${weed_pid:-}" ] && kill -- "-$weed_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/wayside" ./cmd/wayside
bench_start_benchsite "$work" "$PAGES" "$SIZE"
site_pid=$bench_site_pid url=$bench_site_url

# A free loopback port (and +10000 free: SeaweedFS's gRPC port for it).
port() {
	python3 - <<'EOF'
import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close()
    if p + 10000 > 65535: continue
    t = socket.socket()
    try:
        t.bind(("127.0.0.1", p + 10000)); t.close(); print(p); break
    except OSError:
        t.close()
EOF
}
s3p=$(port) mp=$(port) vp=$(port) fp=$(port)
export AWS_ACCESS_KEY_ID=benchaccesskey AWS_SECRET_ACCESS_KEY=benchsecretkey0123456789
mkdir -p "$work/weed"
cat >"$work/s3.json" <<EOF
{"identities":[{"name":"bench","credentials":[{"accessKey":"$AWS_ACCESS_KEY_ID","secretKey":"$AWS_SECRET_ACCESS_KEY"}],"actions":["Admin","Read","Write","List","Tagging"]}]}
EOF
setsid "$weed" server -dir="$work/weed" -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.port="$mp" -volume.port="$vp" \
	-filer.port="$fp" -s3 -s3.port="$s3p" -s3.config="$work/s3.json" -master.volumeSizeLimitMB=64 -volume.max=50 \
	>"$work/weed.log" 2>&1 &
weed_pid=$!
ok=
for _ in $(seq 300); do
	if echo "s3.bucket.create -name wayside" | "$weed" shell -master="127.0.0.1:$mp" >>"$work/shell.log" 2>&1 &&
		"$work/wayside" upload --quiet --to "s3://wayside/probe?endpoint=http://127.0.0.1:$s3p" "$work" >/dev/null 2>&1; then
		ok=1
		break
	fi
	sleep 0.5
done
[ -n "$ok" ] || { echo "bench-upload.sh: SeaweedFS did not come up" >&2; tail -20 "$work/weed.log" >&2; exit 1; }
echo "site: $PAGES resources of $SIZE bytes, --parallel $PARALLEL, $REPS runs each; S3: SeaweedFS on 127.0.0.1:$s3p"
for i in $(seq "$REPS"); do
	bench_crawl "$work/results" local "$work/wayside" "$url" "$work/warcs-local"
	bench_crawl "$work/results" upload "$work/wayside" "$url" "$work/warcs-upload" --upload "s3://wayside/run$i?endpoint=http://127.0.0.1:$s3p" --keep-local
	n=$(ls "$work/warcs-upload"/*.warc.gz.uploaded 2>/dev/null | wc -l)
	w=$(ls "$work/warcs-upload"/*.warc.gz | wc -l)
	[ "$n" = "$w" ] || { echo "bench-upload.sh: only $n of $w WARC files proved uploaded" >&2; cat "$work/warcs-upload.log" >&2; exit 1; }
done
awk -v l="$(bench_median "$work/results" local)" -v u="$(bench_median "$work/results" upload)" 'BEGIN {
    printf "median: local %.1f, upload %.1f raw MB per CPU-second\n", l, u;
    printf "ratio upload/local %.3f\n", u / l }'
