#!/usr/bin/env bash
# Benchmarks MementoMap compaction, lookup and evaluation on deterministic,
# Zipf-skewed synthetic inputs (wayside mementomap synth), and prints the
# figures: compaction lines/s and peak RSS for 1M and 4M keys (memory must
# not grow with the input), lookups/s on a 1M-line map with the key
# normalisation against the same lookup without it (ratio), a 1M-key map
# spelled as the reference implementation writes it (every present key
# found), the relative cost vs accuracy table at recall 1.0 for several
# weights (+ an SVG plot), and the paper's 36-pair Wh x Wp grid on 1M keys
# chained against each pair compacted from scratch (ratio of times).
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
MEMENTOMAP_BENCH_SIZES=1000000,4000000 go test ./mementomap -run '^$' -bench 'Compact' -benchtime 2x -benchmem
go test ./mementomap -run '^$' -bench 'Lookup' -benchtime 2s -benchmem | tee "$work/lookup-bench.txt"
echo "-- lookup with key normalisation vs the canonical-key lookup it wraps (the lookup before normalisation), same run:"
awk '/lookups\/cpu-s/ { for (i = 1; i <= NF; i++) if ($(i+1) == "lookups/cpu-s") v[$1] = $i }
  END { for (k in v) if (k ~ /\/normalised-/) { u = k; sub(/\/normalised-/, "/unnormalised-", u);
          if (u in v) printf "%s: %.0f lookups/cpu-s normalised, %.0f unnormalised (the floor), ratio %.3f (target: >= 500000 normalised lookups/cpu-s)\n", k, v[k], v[u], v[k]/v[u] } }' \
  "$work/lookup-bench.txt"

echo "== a 1M-key map spelled as the reference implementation writes it (host roots \"com,saza)\"), looked up in the same spelling"
ref="$work/ref-spelled-1000000.ukvs"
grep -v '^!' "$work/full-1000000.ukvs" | sed 's|)/ |) |' > "$ref"
cut -d' ' -f1 "$ref" | awk 'NR % 200 == 0' > "$work/ref-keys.txt"
roots=$(grep -c ') ' "$ref" || true)
timeit "lookup ref-spelled" "$bin" mementomap lookup "$ref" < "$work/ref-keys.txt" > "$work/ref-answers.txt"
echo "host roots spelled without '/': $roots; lookups $(wc -l < "$work/ref-keys.txt"): $(grep -c '^present' "$work/ref-answers.txt") present, $(grep -c '^absent' "$work/ref-answers.txt" || true) absent (must be 0)"

echo "== batch lookup through the command (1M-line map, 40000 URIs incl. SURT canonicalization)"
cut -d' ' -f2 "$work/set-1000000.txt" > "$work/uris.txt"
timeit "lookup batch" "$bin" mementomap lookup "$work/full-1000000.ukvs" < "$work/uris.txt" > /dev/null

echo "== relative cost vs accuracy at recall 1.0 (1M keys, 20000 present + 20000 absent lookups)"
"$bin" mementomap eval --full "$work/full-1000000.ukvs" --set "$work/set-1000000.txt" \
  --sweep 16,8,4,2,1,0.5,0.25,0.1 --table "$work/sweep.tsv" --plot "$work/sweep.svg"
column -t "$work/sweep.tsv"
echo "plot: $work/sweep.svg"

echo "== the paper's grid: Wh x Wp over 4,2,1,0.5,0.25,0 (36 maps) on 1M keys, chained vs each from scratch"
timeit "grid chained" "$bin" mementomap eval --grid --full "$work/full-1000000.ukvs" --set "$work/set-1000000.txt" \
  --table "$work/grid.tsv" --plot "$work/grid.svg" 2> >(grep -v '^grid: wh=' >&2)
timeit "grid scratch" "$bin" mementomap eval --grid --scratch --full "$work/full-1000000.ukvs" --set "$work/set-1000000.txt" \
  --table "$work/grid-scratch.tsv" 2> >(grep -v '^grid: wh=' >&2)
cut -f1-2,4-15 "$work/grid.tsv" > "$work/grid.cmp"; cut -f1-2,4-15 "$work/grid-scratch.tsv" > "$work/grid-scratch.cmp"
cmp -s "$work/grid.cmp" "$work/grid-scratch.cmp" && echo "chained and scratch grids give identical maps' figures"
awk -F'\t' 'FNR == 1 { next } FILENAME ~ /scratch/ { s += $16; next } { c += $16 }
  END { printf "compaction time over the 36 pairs: chained %.2f s, scratch %.2f s, ratio %.3f\n", c, s, c / s }' "$work/grid.tsv" "$work/grid-scratch.tsv"
column -t "$work/grid.tsv"
echo "plot: $work/grid.svg"
