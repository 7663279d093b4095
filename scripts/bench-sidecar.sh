#!/usr/bin/env bash
# Load benchmark of the sidecar daemon (not a test): prints figures.
#
#   scripts/bench-sidecar.sh [lookup-seconds]     (default 60)
#
# 1. Lookups over the Unix socket: `wayside status bench` seeds 100,000
#    originals through the API (PUT batches), then 4 keep-alive connections
#    issue single GET /v1/lookup?digest=... requests (50% hits) and print
#    throughput and latency percentiles (the generator runs on the same
#    machine and shares its CPUs). The same generator drives the floor,
#    scripts/lookupfloor: a bare net/http handler on its own Unix socket
#    (the daemon's server limits) answering the daemon's own hit and miss
#    answers, copied byte for byte. Daemon and floor alternate for 3 rounds
#    (the lookup seconds split among the 6 runs); the script prints each
#    run, the medians, and the daemon's rate and p99 against the floor's
#    (the ratio is what means something on a loaded machine). The server's
#    CPU time per lookup is printed for both. Target on a 2-core machine:
#    >= 20,000 lookups/s with p99 <= 2 ms.
# 2. Ingest throughput: a warcgen WARC (../shared/tools/warcgen, 409 MB raw)
#    is copied into a watched directory; the script waits until the daemon
#    has ingested every byte and reports raw MB per CPU-second of the daemon
#    (utime+stime from /proc) and wall-clock MB/s.
# The last line, "bench-sidecar ratio: ...", is the headline
# scripts/bench-all.sh puts in its table (lookups against the floor, and
# ingest).
#
# LOOKUPS_ONLY=1 skips step 2. PROFILE=FILE writes a CPU profile of the
# daemon's whole run (WAYSIDE_CPUPROFILE) for `go tool pprof -top`, and
# one of the floor to FILE.floor.
#
# WRITES=N measures lookups while a crawl writes: during every lookup run
# (the floor's too) a writer claims and commits N new originals per second
# (`status bench -write-rate`, each commit a durable write) to the daemon
# being measured (during the floor's runs, to the daemon), so the memtable
# grows and the idle flush never runs while the lookups are measured.
# BASE=BINARY measures another wayside binary (main's, say) in the same
# run: a second daemon from BINARY, seeded the same way, takes its turn in
# every round (the order rotates), and the script prints its runs, its
# ratio to the floor and the daemon's rate, p99 and server CPU against it.
# ROUNDS=N sets the rounds (default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
work=$(mktemp -d /tmp/wayside-bench.XXXXXX)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

go build -o "$work/wayside" ./cmd/wayside
mkdir -p "$work/warcs"
${PROFILE:+env WAYSIDE_CPUPROFILE=$PROFILE} "$work/wayside" serve -data-dir "$work/data" -watch "$work/warcs" -poll 200ms -log-level warn 2>"$work/daemon.log" &
pid=$!
for _ in $(seq 100); do [ -S "$work/data/wayside.sock" ] && break; sleep 0.1; done

ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' "/proc/$pid/stat"; }
if [ -n "${BASE:-}" ]; then
  ${PROFILE:+env WAYSIDE_CPUPROFILE=$PROFILE.base} "$BASE" serve -data-dir "$work/base" -watch "$work/warcs-base" -poll 200ms -log-level warn 2>"$work/base.log" &
  bpid=$!
  mkdir -p "$work/warcs-base"
  trap 'kill "$pid" "$bpid" 2>/dev/null || true; wait "$pid" "$bpid" 2>/dev/null || true; rm -rf "$work"' EXIT
  for _ in $(seq 100); do [ -S "$work/base/wayside.sock" ] && break; sleep 0.1; done
fi
rounds=${ROUNDS:-3}
echo "== lookups over the Unix socket for ${secs}s: the daemon${BASE:+, base ($BASE)} and the net/http floor, alternating ${rounds} rounds${WRITES:+, while ${WRITES} originals/s are claimed and committed} =="
"$work/wayside" status -addr "$work/data/wayside.sock" bench -seed 100000 -duration 1s >/dev/null 2>&1   # seed + warm up
[ -n "${BASE:-}" ] && "$work/wayside" status -addr "$work/base/wayside.sock" bench -seed 100000 -duration 1s >/dev/null 2>&1
go build -o "$work/lookupfloor" ./scripts/lookupfloor
${PROFILE:+env WAYSIDE_CPUPROFILE=$PROFILE.floor} "$work/lookupfloor" -from "$work/data/wayside.sock" -listen "$work/floor.sock" 2>"$work/floor.log" &
fpid=$!
trap 'kill "$pid" "$fpid" ${bpid:-} 2>/dev/null || true; wait "$pid" "$fpid" ${bpid:-} 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -S "$work/floor.sock" ] && break; sleep 0.1; done
names=(daemon floor)
[ -n "${BASE:-}" ] && names=(daemon base floor)
run=$(( secs / (rounds * ${#names[@]}) > 0 ? secs / (rounds * ${#names[@]}) : 1 ))
lookups() { # name socket server-pid write-socket
  local c0 c1
  c0=$(awk '{print $14+$15}' "/proc/$3/stat")
  "$work/wayside" status -addr "$2" bench -duration "${run}s" -workers "${WORKERS:-4}" -seed 0 -keys 100000 -json \
    ${WRITES:+-write-rate "$WRITES" -write-addr "$4"} 2>/dev/null >"$work/bench.json"
  c1=$(awk '{print $14+$15}' "/proc/$3/stat")
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r["name"]=sys.argv[2]; r["ServerCPU"]=(int(sys.argv[4])-int(sys.argv[3]))/int(sys.argv[5]); print(json.dumps(r))' \
    "$work/bench.json" "$1" "$c0" "$c1" "$ticks" >>"$work/runs.jsonl"
}
lookups1() {
  case $1 in
  daemon) lookups daemon "$work/data/wayside.sock" "$pid" "$work/data/wayside.sock" ;;
  base) lookups base "$work/base/wayside.sock" "$bpid" "$work/base/wayside.sock" ;;
  floor) lookups floor "$work/floor.sock" "$fpid" "$work/data/wayside.sock" ;;
  esac
}
for r in $(seq "$rounds"); do
  # Rotate the order: each name runs first in some round.
  n=${#names[@]}
  for i in $(seq 0 $((n - 1))); do lookups1 "${names[$(( (i + r - 1) % n ))]}"; done
done
python3 - "$work/runs.jsonl" "$work/ratio" "${#names[@]}" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
per = int(sys.argv[3])
for r in runs:
    n = max(r["Lookups"], 1)
    w = f"  writes {r.get('Writes', 0)}" if r.get("Writes") or r.get("WriteErrors") else ""
    print(f"{r['name']:6} {r['PerSecond']:8.0f}/s  p50 {r['P50']/1e3:5.0f} us  p99 {r['P99']/1e3:6.0f} us  p99.9 {r['P999']/1e3:6.0f} us  "
          f"errors {r['Errors']}  server CPU {r['ServerCPU']*1e6/n:5.1f} us/lookup  generator {r['ClientCPU']/1e3/n:5.1f} us/lookup{w}")
names = [r["name"] for r in runs[:per]]
med = lambda name, f: statistics.median(f(r) for r in runs if r["name"] == name)
rate = lambda r: r["PerSecond"]
p99 = lambda r: r["P99"] / 1e3
scpu = lambda r: r["ServerCPU"] * 1e6 / max(r["Lookups"], 1)
nr = len(runs) // per
for name in names:
    if name != "floor":
        print(f"lookups (medians of {nr}): {name} {med(name, rate):.0f}/s, p99 {med(name, p99):.0f} us, {med(name, scpu):.1f} server CPU-us/lookup")
print(f"lookups (medians of {nr}): floor {med('floor', rate):.0f}/s, p99 {med('floor', p99):.0f} us, {med('floor', scpu):.1f} CPU-us/lookup")
# Each round's runs against each other: the machine's load changes less
# within a round than across the script.
rounds = [{r["name"]: r for r in runs[i:i + per]} for i in range(0, len(runs), per)]
ratio = lambda a, b, f: statistics.median(f(r[a]) / f(r[b]) for r in rounds)
for name in names:
    if name != "floor":
        print(f"lookups: {name}/floor per round (median of {nr}): rate {ratio(name, 'floor', rate):.2f}, p99 {ratio(name, 'floor', p99):.2f}, server CPU per lookup {ratio(name, 'floor', scpu):.2f} "
              f"(target: >= 20,000/s with p99 <= 2 ms)")
if "base" in names:
    print(f"lookups: daemon/base per round (median of {nr}): rate {ratio('daemon', 'base', rate):.2f}, p99 {ratio('daemon', 'base', p99):.2f}, server CPU per lookup {ratio('daemon', 'base', scpu):.2f}")
d = med("daemon", rate)
with open(sys.argv[2], "w") as out:
    print(f"lookups daemon/floor {ratio('daemon', 'floor', rate):.2f} ({d:.0f}/s, p99 {med('daemon', p99):.0f} us)", file=out)
if sum(r["Errors"] + r.get("WriteErrors", 0) for r in runs):
    sys.exit("lookup errors: " + next(r["FirstError"] for r in runs if r["Errors"] or r.get("WriteErrors")))
PY

if [ -n "${LOOKUPS_ONLY:-}" ]; then
  "$work/wayside" status -addr "$work/data/wayside.sock" >/dev/null
  echo "bench-sidecar ratio: $(cat "$work/ratio")"
  exit 0
fi
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
python3 - "$raw" "$size" "$c0" "$c1" "$ticks" "$t0" "$t1" "$work/ratio" <<'PY'
import sys
raw, size, c0, c1, ticks, t0, t1 = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])
cpu = (c1 - c0) / ticks
wall = t1 - t0
print(f"ingested {raw/1e6:.1f} MB raw ({size/1e6:.1f} MB gzip) in {wall:.1f} s wall, {cpu:.1f} CPU-s")
print(f"ingest: {raw/1e6/cpu:.1f} raw MB per CPU-second, {raw/1e6/wall:.1f} raw MB/s wall")
with open(sys.argv[8], "a") as out:
    print(f"; ingest {raw/1e6/cpu:.1f} raw MB/CPU-s", file=out)
PY
"$work/wayside" status -addr "$work/data/wayside.sock"
echo "bench-sidecar ratio: $(tr -d '\n' <"$work/ratio")"
