#!/usr/bin/env bash
# Benchmarks access rules (not a test): TimeGate and CDX requests per second
# through the public front of `wayside serve` with 10,000 access rules in
# force versus none, alternating four times in the same run (the daemon
# reloads the rules file it watches), over the synthetic capture index of
# scripts/bench-access.sh (2,000 URLs × 10 captures asked at random).
#
#   scripts/bench-access-rules.sh [seconds per measurement] [workers] [rules]   (default 3 s, 4 workers, 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-3}
workers=${2:-4}
nrules=${3:-10000}
work=$(mktemp -d /tmp/wayside-bench-rules.XXXXXX)
pid=
trap '[ -n "$pid" ] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$work"' EXIT

go build -o "$work/wayside" ./cmd/wayside
go build -o "$work/accessbench" ./scripts/accessbench
mkdir -p "$work/data" "$work/rules"
"$work/accessbench" fill "$work/data/capture-index" >/dev/null
cat > "$work/wayside.yaml" <<YAML
data_dir: $work/data
listen:
  unix: $work/data/wayside.sock
mementomap:
  path: "-"
access:
  rules: $work/rules
public:
  listen: 127.0.0.1:0
log:
  level: warn
YAML
"$work/wayside" serve -config "$work/wayside.yaml" 2>"$work/daemon.log" &
pid=$!
for _ in $(seq 300); do [ -S "$work/data/wayside.sock" ] && break; sleep 0.1; done
url=$("$work/wayside" access list --addr "$work/data/wayside.sock" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["fronts"][0]["url"])')
echo "== TimeGate and CDX through the public front: $nrules access rules vs none ($workers workers, ${secs}s × 4 rounds each) =="
"$work/accessbench" rules "$url/default" "$work/rules/bench.aclj" "$nrules" "$secs" "$workers"
