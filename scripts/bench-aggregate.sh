#!/usr/bin/env bash
# Benchmarks the MementoMap-routed aggregator (not a test): prints figures,
# routed lookups next to asking every archive, measured in the same run.
#
#   scripts/bench-aggregate.sh [lookups] [keys] [weight]
#
# Defaults: 10000 lookups over 50000 keys, full maps; a weight (e.g. 1)
# serves maps compacted with it (wildcards: smaller, less precise).
#
# 1. aggbench fill: three archives' holdings from a Zipf-skewed synthetic
#    key set (hosts spread over the archives, one in four held twice), as a
#    capture index and a full MementoMap per archive, and a labelled lookup
#    set: Zipf-distributed over the held keys (s=1.1), 20% absent keys.
# 2. Three `wayside serve` daemons on loopback TCP answer TimeMaps from
#    those indexes and serve their maps at /mementomap.
# 3. `wayside aggregate eval --all` replays the set sequentially: each
#    lookup routed by the maps and, alternately before or after it, asking
#    every archive (MemGator's way); it prints upstream requests made and
#    avoided, recall (must be 1.0), whether every merged TimeMap equals
#    asking every archive, and p50/p99 latency of both.
set -euo pipefail
cd "$(dirname "$0")/.."
lookups=${1:-10000}
keys=${2:-50000}
weight=${3:-0}
work=$(mktemp -d /tmp/wayside-bench-aggregate.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/wayside" ./cmd/wayside
go build -o "$work/aggbench" ./scripts/aggbench
echo "== holdings and lookup set =="
"$work/aggbench" fill "$work" "$keys" "$lookups" "$weight"

token=bench-token-0123456789abcdef
cdx=bench-cdx-token-0123456789
agg="$work/agg.yaml"
printf 'data_dir: %s/agg\nlisten:\n  unix: %s/agg/wayside.sock\naggregate:\n  deadline: 10s\n  archives:\n' "$work" "$work" > "$agg"
for i in 0 1 2; do
  d="$work/arch-$i"
  cat > "$d/wayside.yaml" <<YAML
data_dir: $d
listen:
  unix: $d/wayside.sock
  tcp: 127.0.0.1:0
  token: $token
  cdx_token: $cdx
log:
  level: warn
YAML
  "$work/wayside" serve -config "$d/wayside.yaml" 2>"$d/daemon.log" &
  pids+=($!)
  for _ in $(seq 300); do [ -S "$d/wayside.sock" ] && break; sleep 0.1; done
  addr=$("$work/wayside" status -addr "$d/wayside.sock" -json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tcp"])')
  base="http://$addr/t/$cdx"
  printf '    - name: arch-%s\n      timemap: %s/default/timemap/link/\n      timegate: %s/default/\n      mementomap: %s/mementomap\n' "$i" "$base" "$base" "$base" >> "$agg"
done

echo "== $lookups lookups, routed by the maps vs asking every archive (3 sidecars, loopback) =="
"$work/wayside" aggregate eval -config "$agg" --set "$work/set.txt" --all -q
ticks=$(getconf CLK_TCK)
for i in 0 1 2; do
  p=${pids[$i]}
  echo "arch-$i daemon CPU: $(awk -v t="$ticks" '{printf "%.1f s", ($14+$15)/t}' "/proc/$p/stat"), max RSS $(awk '/VmHWM/ {print $2 " kB"}' "/proc/$p/status")"
done
