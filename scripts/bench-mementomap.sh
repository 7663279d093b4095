#!/usr/bin/env bash
# Benchmarks MementoMap compaction, lookup and evaluation on deterministic,
# Zipf-skewed synthetic inputs (wayside mementomap synth), and prints the
# figures: compaction lines/s and peak RSS for 1M and 4M keys (memory must
# not grow with the input), lookups/s on a 1M-line map, and the relative
# cost vs accuracy table at recall 1.0 for several weights (+ an SVG plot).
#
# Usage: scripts/bench-mementomap.sh [WORKDIR]   (default: a fresh temp dir)
# Needs /usr/bin/time (GNU time) for peak RSS. Takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-$(mktemp -d)}
mkdir -p "$work"
bin="$work/wayside"
go build -o "$bin" ./cmd/wayside
echo "work dir: $work"
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

timeit() { # label, command...
  local label=$1; shift
  /usr/bin/time -f "$label: %e s wall, %U s user, %S s sys, peak RSS %M KB" "$@"
}

# The paper's per-depth means (Arquivo.pt) for the one-pass runs.
paper="1000,1000,8.53,8.95,5;25,7.25,4.96,3.26,2"

for n in 1000000 4000000; do
  full="$work/full-$n.ukvs"
  if [ ! -s "$full" ]; then
    set_args=()
    [ "$n" = 1000000 ] && set_args=(--set "$work/set-$n.txt" --absent 20000)
    timeit "synth $n" "$bin" mementomap synth -n "$n" -o "$full" "${set_args[@]}"
  fi
  echo "== compaction, $n keys ($(du -h "$full" | cut -f1))"
  timeit "compact $n measured (2 passes) 1 worker " "$bin" mementomap compact --w 1 --workers 1 "$full" "$work/c-$n.ukvs"
  timeit "compact $n measured (2 passes) 2 workers" "$bin" mementomap compact --w 1 --workers 2 "$full" "$work/c2-$n.ukvs"
  cmp "$work/c-$n.ukvs" "$work/c2-$n.ukvs" && echo "parallel output identical to single-process output"
  timeit "compact $n given means (1 pass) 1 worker" "$bin" mementomap compact --w 1 --workers 1 --means "$paper" "$full" "$work/c1p-$n.ukvs"
done

echo "== Go benchmarks (CPU-time throughput is reported as well as wall time: the machine may be shared)"
MEMENTOMAP_BENCH_SIZES=1000000,4000000 go test ./profiler/mementomap -run '^$' -bench 'Compact' -benchtime 2x -benchmem
go test ./profiler/mementomap -run '^$' -bench 'Lookup' -benchtime 2s -benchmem

echo "== batch lookup through the command (1M-line map, 40000 URIs incl. SURT canonicalization)"
cut -d' ' -f2 "$work/set-1000000.txt" > "$work/uris.txt"
timeit "lookup batch" "$bin" mementomap lookup "$work/full-1000000.ukvs" < "$work/uris.txt" > /dev/null

echo "== relative cost vs accuracy at recall 1.0 (1M keys, 20000 present + 20000 absent lookups)"
"$bin" mementomap eval --full "$work/full-1000000.ukvs" --set "$work/set-1000000.txt" \
  --sweep 16,8,4,2,1,0.5,0.25,0.1 --table "$work/sweep.tsv" --plot "$work/sweep.svg"
column -t "$work/sweep.tsv"
echo "plot: $work/sweep.svg"
