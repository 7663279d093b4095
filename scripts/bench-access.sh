#!/usr/bin/env bash
# Benchmarks the capture index and the access routes of `wayside serve`
# (not a test): prints figures, each next to a peer measured in the same run.
#
#   scripts/bench-access.sh [seconds] [workers]     (TimeGate load: default 20 s, 4 workers)
#
# 1. Capture index bytes per capture, on the warcgen WARC (its default size,
#    22,615 records; WARC=... to reuse one), after compaction; peer: the
#    CDXJ lines of the same captures, plain and gzip -9.
# 2. A capture index with one URL captured 10,000 times and 2,000 URLs
#    captured 10 times each; floor: a raw scan of the 10,000 captures.
# 3. `wayside serve` over that index on loopback TCP (with the CDX token):
#    TimeMap of the 10,000 captures, 100 sequential GETs (p50, p99); peer: a
#    static file server serving the same bytes. TimeGate requests/s with
#    random URLs and Accept-Datetime from concurrent keep-alive clients;
#    peer: the static server answering a file of the same size. Client and
#    servers share the machine's CPUs.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
workers=${2:-4}
WARC=${WARC:-/tmp/bench-access.warc.gz}
SHARED=${SHARED:-../shared}
work=$(mktemp -d /tmp/wayside-bench-access.XXXXXX)
pid=
trap '[ -n "$pid" ] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$work"' EXIT

go build -o "$work/wayside" ./cmd/wayside
go build -o "$work/accessbench" ./scripts/accessbench
if [ ! -f "$WARC" ]; then
  echo "bench-access: generating $WARC with $SHARED/tools/warcgen" >&2
  (cd "$SHARED/tools/warcgen" && go run . -o "$WARC")
fi

echo "== capture index size (warcgen WARC, $(du -h "$WARC" | cut -f1)) =="
"$work/accessbench" size "$WARC"

echo "== TimeMap and TimeGate over loopback =="
mkdir -p "$work/data"
"$work/accessbench" fill "$work/data/capture-index"
token=bench-token-0123456789abcdef
cdx=bench-cdx-token-0123456789
cat > "$work/wayside.yaml" <<YAML
data_dir: $work/data
listen:
  unix: $work/data/wayside.sock
  tcp: 127.0.0.1:0
  token: $token
  cdx_token: $cdx
mementomap:
  path: "-"
log:
  level: warn
YAML
"$work/wayside" serve -config "$work/wayside.yaml" 2>"$work/daemon.log" &
pid=$!
for _ in $(seq 300); do [ -S "$work/data/wayside.sock" ] && break; sleep 0.1; done
addr=$("$work/wayside" status -addr "$work/data/wayside.sock" -json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tcp"])')
"$work/accessbench" load "http://$addr/t/$cdx/default" "$secs" "$workers"
ticks=$(getconf CLK_TCK)
echo "daemon CPU: $(awk -v t="$ticks" '{printf "%.1f s", ($14+$15)/t}' "/proc/$pid/stat"), max RSS $(awk '/VmHWM/ {print $2 " kB"}' "/proc/$pid/status")"
