#!/usr/bin/env bash
# The aggregator under abuse (not a test): an upstream archive on loopback
# serves a 32 MiB link-format TimeMap for every URI-R; `wayside serve`
# aggregates it; 10 clients ask for aggregated TimeMaps at once. Prints each
# answer's status and time (the deadline: 10 s) and the daemon's peak RSS.
# The documented bound: the daemon's peak RSS stays under 256 MiB (upstream
# TimeMaps are streamed into sorted spill runs and merged, see
# aggregate/doc.go "Memory"); measured 2026-11-27 on the shared 2-core
# machine: 10 × HTTP 200 (complete, 33.5 MB each) in 7.7-8.1 s, peak RSS
# 206 MiB (before: 2.85 GB, answers past the deadline).
#
#   scripts/bench-aggregate-abuse.sh [bytes] [parallel]     (default 33554432, 10)
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-33554432}
n=${2:-10}
work=$(mktemp -d /tmp/wayside-bench-abuse.XXXXXX)
pid=
trap '[ -n "$pid" ] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$work"' EXIT
go build -o "$work/wayside" ./cmd/wayside
go build -o "$work/aggbench" ./scripts/aggbench
mkdir -p "$work/data"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$work/aggbench" abuse "$work/upstream" "http://127.0.0.1:$port/aggregate/timemap/link/http://example.com/" "$size" "$n" &
bench=$!
for _ in $(seq 300); do [ -s "$work/upstream" ] && break; sleep 0.1; done
cat > "$work/wayside.yaml" <<YAML
data_dir: $work/data
listen:
  unix: $work/data/wayside.sock
mementomap:
  path: "-"
public:
  listen: 127.0.0.1:$port
aggregate:
  archives:
    - name: big
      timemap: http://$(cat "$work/upstream")/tm/
log:
  level: warn
YAML
"$work/wayside" serve -config "$work/wayside.yaml" 2>"$work/daemon.log" &
pid=$!
wait "$bench"
echo "daemon max RSS $(awk '/VmHWM/ {print $2 " kB"}' "/proc/$pid/status")"
