#!/usr/bin/env bash
# Load benchmark of the sidecar daemon (not a test): prints figures.
#
#   scripts/bench-sidecar.sh [lookup-seconds]     (default 60)
#
# 1. Lookups over the Unix socket: `wayside status bench` seeds 100,000
#    originals through the API (PUT batches), then 4 keep-alive connections
#    issue single GET /v1/lookup?digest=... requests (50% hits) for the given
#    duration and print throughput and latency percentiles (the generator runs
#    on the same machine and shares its CPUs). The daemon's own CPU time per
#    lookup is printed too. Target on a 2-core machine: >= 20,000 lookups/s
#    with p99 <= 2 ms.
# 2. Ingest throughput: a warcgen WARC (../shared/tools/warcgen, 409 MB raw)
#    is copied into a watched directory; the script waits until the daemon
#    has ingested every byte and reports raw MB per CPU-second of the daemon
#    (utime+stime from /proc) and wall-clock MB/s.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
work=$(mktemp -d /tmp/wayside-bench.XXXXXX)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

go build -o "$work/wayside" ./cmd/wayside
mkdir -p "$work/warcs"
"$work/wayside" serve -data-dir "$work/data" -watch "$work/warcs" -poll 200ms -log-level warn 2>"$work/daemon.log" &
pid=$!
for _ in $(seq 100); do [ -S "$work/data/wayside.sock" ] && break; sleep 0.1; done

ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' "/proc/$pid/stat"; }
echo "== lookups over the Unix socket for ${secs}s =="
"$work/wayside" status -addr "$work/data/wayside.sock" bench -seed 100000 -duration 1s >/dev/null 2>&1   # seed + warm up
d0=$(cpu)
"$work/wayside" status -addr "$work/data/wayside.sock" bench -duration "${secs}s" -workers "${WORKERS:-4}" -seed 0 -keys 100000 -json 2>/dev/null >"$work/bench.json"
d1=$(cpu)
python3 - "$work/bench.json" "$d0" "$d1" "$ticks" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
d = (int(sys.argv[3]) - int(sys.argv[2])) / int(sys.argv[4])
n = r["Lookups"]
print(f"lookups {n} in {r['Elapsed']/1e9:.1f} s = {r['PerSecond']:.0f}/s, hits {r['Hits']}, errors {r['Errors']}")
print(f"latency p50 {r['P50']/1e3:.0f} us, p99 {r['P99']/1e3:.0f} us, p99.9 {r['P999']/1e3:.0f} us, max {r['Max']/1e6:.1f} ms")
print(f"CPU per lookup: daemon {d*1e6/n:.1f} us, load generator {r['ClientCPU']/1e3/n:.1f} us")
PY

echo "== ingest of a warcgen WARC =="
warc=${WARCGEN_WARC:-/tmp/wayside-bench-warcgen.warc.gz}
if [ ! -f "$warc" ]; then
  (cd ../shared/tools/warcgen && go run . -o "$warc")
fi
raw=$(python3 -c 'import gzip,sys; n=0
with gzip.open(sys.argv[1],"rb") as f:
    while True:
        b=f.read(1<<20)
        if not b: break
        n+=len(b)
print(n)' "$warc")
size=$(stat -c %s "$warc")
c0=$(cpu); t0=$(date +%s.%N)
cp "$warc" "$work/warcs/bench.warc.gz.open"
mv "$work/warcs/bench.warc.gz.open" "$work/warcs/bench.warc.gz"
while true; do
  off=$("$work/wayside" status -addr "$work/data/wayside.sock" -json ingest | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(f["offset"] for f in d["files"]))')
  [ "$off" -ge "$size" ] && break
  sleep 0.2
done
c1=$(cpu); t1=$(date +%s.%N)
python3 - "$raw" "$size" "$c0" "$c1" "$ticks" "$t0" "$t1" <<'PY'
import sys
raw, size, c0, c1, ticks, t0, t1 = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])
cpu = (c1 - c0) / ticks
wall = t1 - t0
print(f"ingested {raw/1e6:.1f} MB raw ({size/1e6:.1f} MB gzip) in {wall:.1f} s wall, {cpu:.1f} CPU-s")
print(f"ingest: {raw/1e6/cpu:.1f} raw MB per CPU-second, {raw/1e6/wall:.1f} raw MB/s wall")
PY
"$work/wayside" status -addr "$work/data/wayside.sock"
