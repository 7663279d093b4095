#!/usr/bin/env bash
# Benchmarks MementoMap compaction, lookup and evaluation on deterministic,
# Zipf-skewed synthetic inputs (wayside mementomap synth), and prints the
# figures: compaction lines/s, CPU and peak RSS for N and 4N keys (memory
# must not grow with the input: the summary gives the 4N/N ratios),
# lookups/s on a 1M-line map with the key normalisation against the same
# lookup without it (ratio; floor 500k/s), a map spelled as the reference
# implementation writes it (every present key found), the relative cost vs
# accuracy table at recall 1.0 for several weights (+ an SVG plot), and the
# paper's 36-pair Wh x Wp grid chained against each pair compacted from
# scratch (ratio of times).
#
# Usage: scripts/bench-mementomap.sh [WORKDIR]   (default: a fresh temp dir; its
#   synthetic maps are removed at the end, tables and plots kept)
#   short (default, 1-2 minutes): compaction on 250k and 1M keys, Go benchmarks
#     -benchtime 1x (compaction) and 0.5s (lookups), eval and grid on 250k keys
#   LONG=1: compaction on 1M and 4M keys, -benchtime 2x and 2s, eval and grid on 1M keys
#   SIZES="N 4N" EVAL_KEYS=N override.
# Needs /usr/bin/time (GNU time) for peak RSS. Stopped (Ctrl-C, timeout),
# it prints the figures measured so far.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/benchlib.sh
LONG=${LONG:-}
SIZES=${SIZES:-$(bench_long "1000000 4000000" "250000 1000000")}
EVAL_KEYS=${EVAL_KEYS:-${SIZES%% *}}
if [ -n "${1:-}" ]; then work=$1 ours=""; else work=$(mktemp -d) ours=1; fi
mkdir -p "$work"
: >"$work/times"
: >"$work/lookup-bench.txt"

summary() {
	# Compaction growth: the last size over the first, measured means, 1 worker.
	awk -v first="${SIZES%% *}" -v last="${SIZES##* }" '
		/^compact [0-9]+ measured \(2 passes\) 1 worker/ {
			n = $2; match($0, /[0-9.]+ s user/); u = substr($0, RSTART, RLENGTH) + 0
			match($0, /[0-9.]+ s sys/); s = substr($0, RSTART, RLENGTH) + 0
			match($0, /peak RSS [0-9]+/); r = substr($0, RSTART + 9, RLENGTH - 9) + 0
			cpu[n] = u + s; rss[n] = r
			printf "  compaction, %d keys, measured means, 1 worker: %.2f CPU-s, peak RSS %.0f MB\n", n, u + s, r / 1024 }
		END { if ((first in cpu) && (last in cpu) && cpu[first] > 0 && rss[first] > 0)
			printf "  compaction growth %d/%d keys: CPU x%.2f (target x%.0f +-10%%), peak RSS x%.2f (target flat)\n",
				last, first, cpu[last] / cpu[first], last / first, rss[last] / rss[first] }' "$work/times" | tee "$work/growth"
	local lookup grid growth out=""
	lookup=$(awk '/lookups\/cpu-s/ { for (i = 1; i <= NF; i++) if ($(i+1) == "lookups/cpu-s") v[$1] = $i }
		END { for (k in v) if (k ~ /lines=1000000\/normalised-/) { u = k; sub(/\/normalised-/, "/unnormalised-", u)
			printf "lookups %.0f/CPU-s normalised (1M lines) = %.2fx the 500k floor", v[k], v[k] / 500000
			if (u in v) printf ", %.2fx unnormalised", v[k] / v[u] } }' "$work/lookup-bench.txt")
	growth=$(sed -n 's/^  compaction growth \([0-9]*\/[0-9]*\) keys: CPU \(x[0-9.]*\) .*RSS \(x[0-9.]*\).*/compaction \1 keys: CPU \2, RSS \3/p' "$work/growth")
	grid=$(sed -n 's/.*chained .*, ratio \([0-9.]*\)$/grid chained\/scratch \1/p' "$work/grid-ratio" 2>/dev/null)
	[ -n "$growth" ] || growth=$(sed -n 's/^  compaction, \([0-9]* keys\), measured means, 1 worker: \(.*\)/compaction \1: \2 (no growth ratio yet)/p' "$work/growth" | head -1)
	for f in "$lookup" "$growth" "$grid"; do [ -n "$f" ] && out="$out${out:+; }$f"; done
	echo "bench-mementomap ratio: ${out:-nothing measured yet ($_bench_step)}"
}
cleanup() { [ -z "$ours" ] || rm -f "$work"/*.ukvs "$work"/*.txt "$work"/*.cmp; }
bench_exit_hooks bench-mementomap summary cleanup

bench_step "building"
bin="$work/wayside"
go build -o "$bin" ./cmd/wayside
echo "work dir: $work"
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$(bench_long long short) form: compaction on $SIZES keys, eval and grid on $EVAL_KEYS"

timeit() { # label, command...
  local label=$1; shift
  /usr/bin/time -a -o "$work/times" -f "$label: %e s wall, %U s user, %S s sys, peak RSS %M KB" "$@"
  tail -1 "$work/times" >&2
}

# The paper's per-depth means (Arquivo.pt) for the one-pass runs.
paper="1000,1000,8.53,8.95,5;25,7.25,4.96,3.26,2"

bench_step "synthesizing and compacting"
for n in $SIZES; do
  full="$work/full-$n.ukvs"
  if [ ! -s "$full" ]; then
    set_args=()
    [ "$n" = "$EVAL_KEYS" ] && set_args=(--set "$work/set-$n.txt" --absent 20000)
    timeit "synth $n" "$bin" mementomap synth -n "$n" -o "$full" "${set_args[@]}"
  fi
  echo "== compaction, $n keys ($(du -h "$full" | cut -f1))"
  timeit "compact $n measured (2 passes) 1 worker " "$bin" mementomap compact --w 1 --workers 1 "$full" "$work/c-$n.ukvs"
  timeit "compact $n measured (2 passes) 2 workers" "$bin" mementomap compact --w 1 --workers 2 "$full" "$work/c2-$n.ukvs"
  cmp "$work/c-$n.ukvs" "$work/c2-$n.ukvs" && echo "parallel output identical to single-process output"
  timeit "compact $n given means (1 pass) 1 worker" "$bin" mementomap compact --w 1 --workers 1 --means "$paper" "$full" "$work/c1p-$n.ukvs"
done

bench_step "running the Go benchmarks"
echo "== Go benchmarks (CPU-time throughput is reported as well as wall time: the machine may be shared)"
MEMENTOMAP_BENCH_SIZES=$(echo $SIZES | tr ' ' ,) go test ./mementomap -run '^$' -bench 'Compact' -benchtime "$(bench_long 2x 1x)" -benchmem
go test ./mementomap -run '^$' -bench 'Lookup' -benchtime "$(bench_long 2s 0.5s)" -benchmem | tee "$work/lookup-bench.txt"
echo "-- lookup with key normalisation vs the canonical-key lookup it wraps (the lookup before normalisation), same run:"
awk '/lookups\/cpu-s/ { for (i = 1; i <= NF; i++) if ($(i+1) == "lookups/cpu-s") v[$1] = $i }
  END { for (k in v) if (k ~ /\/normalised-/) { u = k; sub(/\/normalised-/, "/unnormalised-", u);
          if (u in v) printf "%s: %.0f lookups/cpu-s normalised, %.0f unnormalised (the floor), ratio %.3f (target: >= 500000 normalised lookups/cpu-s)\n", k, v[k], v[u], v[k]/v[u] } }' \
  "$work/lookup-bench.txt"

bench_step "looking up and evaluating"
echo "== a $EVAL_KEYS-key map spelled as the reference implementation writes it (host roots \"com,saza)\"), looked up in the same spelling"
ref="$work/ref-spelled-$EVAL_KEYS.ukvs"
grep -v '^!' "$work/full-$EVAL_KEYS.ukvs" | sed 's|)/ |) |' > "$ref"
cut -d' ' -f1 "$ref" | awk 'NR % 200 == 0' > "$work/ref-keys.txt"
roots=$(grep -c ') ' "$ref" || true)
timeit "lookup ref-spelled" "$bin" mementomap lookup "$ref" < "$work/ref-keys.txt" > "$work/ref-answers.txt"
echo "host roots spelled without '/': $roots; lookups $(wc -l < "$work/ref-keys.txt"): $(grep -c '^present' "$work/ref-answers.txt") present, $(grep -c '^absent' "$work/ref-answers.txt" || true) absent (must be 0)"

echo "== batch lookup through the command ($EVAL_KEYS-line map, 40000 URIs incl. SURT canonicalization)"
cut -d' ' -f2 "$work/set-$EVAL_KEYS.txt" > "$work/uris.txt"
timeit "lookup batch" "$bin" mementomap lookup "$work/full-$EVAL_KEYS.ukvs" < "$work/uris.txt" > /dev/null

echo "== relative cost vs accuracy at recall 1.0 ($EVAL_KEYS keys, 20000 present + 20000 absent lookups)"
"$bin" mementomap eval --full "$work/full-$EVAL_KEYS.ukvs" --set "$work/set-$EVAL_KEYS.txt" \
  --sweep 16,8,4,2,1,0.5,0.25,0.1 --table "$work/sweep.tsv" --plot "$work/sweep.svg"
column -t "$work/sweep.tsv"
echo "plot: $work/sweep.svg"

echo "== the paper's grid: Wh x Wp over 4,2,1,0.5,0.25,0 (36 maps) on $EVAL_KEYS keys, chained vs each from scratch"
timeit "grid chained" "$bin" mementomap eval --grid --full "$work/full-$EVAL_KEYS.ukvs" --set "$work/set-$EVAL_KEYS.txt" \
  --table "$work/grid.tsv" --plot "$work/grid.svg" 2> >(grep -v '^grid: wh=' >&2)
timeit "grid scratch" "$bin" mementomap eval --grid --scratch --full "$work/full-$EVAL_KEYS.ukvs" --set "$work/set-$EVAL_KEYS.txt" \
  --table "$work/grid-scratch.tsv" 2> >(grep -v '^grid: wh=' >&2)
cut -f1-2,4-15 "$work/grid.tsv" > "$work/grid.cmp"; cut -f1-2,4-15 "$work/grid-scratch.tsv" > "$work/grid-scratch.cmp"
cmp -s "$work/grid.cmp" "$work/grid-scratch.cmp" && echo "chained and scratch grids give identical maps' figures"
awk -F'\t' 'FNR == 1 { next } FILENAME ~ /scratch/ { s += $16; next } { c += $16 }
  END { printf "compaction time over the 36 pairs: chained %.2f s, scratch %.2f s, ratio %.3f\n", c, s, c / s }' "$work/grid.tsv" "$work/grid-scratch.tsv" | tee "$work/grid-ratio"
column -t "$work/grid.tsv"
echo "plot: $work/grid.svg"
