#!/usr/bin/env bash
# bench-characterize.sh — format characterization throughput, and what it
# costs a crawl.
#
# 1. `wayside characterize` on the warcgen benchmark WARC: uncompressed (raw)
#    MB per CPU-second (user+sys) and peak RSS, next to `wayside cdxj` on
#    the same file in the same run (the floor: reading, decompressing and
#    digesting the records), for this tree ("after") and for BEFORE.
#    Target: >= 50 raw MB per CPU-second.
# 2. `wayside crawl` with and without --characterize, for this tree and for
#    BEFORE, of two local sites served from separate processes:
#      - warcsite: the HTTP responses of the warcgen WARC (scripts/warcsite:
#        HTML, CSS, JS, JSON, SVG, JPEG, PNG, GIF, WebP, WOFF2, some
#        gzip-encoded; duplicates under other URLs become revisits), the
#        realistic format mix;
#      - benchsite: PAGES resources of SIZE bytes, half HTML, half random
#        binary (crawl/sitetest/benchsite), siegfried's worst case (no magic
#        number matches, every byte of the scan windows is read).
#    A run's throughput is the raw WARC bytes written (zcat | wc -c) per
#    CPU-second of the crawler process (characterization runs in it). Each
#    configuration runs REPS times, interleaved; medians are printed, and
#    for each binary how much lower the throughput is with
#    characterization on. Target: at most 30% lower.
#
# BEFORE (a commit) adds that tree's binary to every comparison; LONG=1
# sets it to c61cfcc, main before Capture.RecordBytes (the characterizer
# read every record back from its WARC file). The short form has none.
#
# Short form (default, 1-2 minutes): the warcgen WARC of 48 MiB
# (/tmp/bench-48.warc.gz, generated if missing), PAGES=100, REPS=3, no
# BEFORE. LONG=1: the default warcgen WARC (409 MB raw, /tmp/bench.warc.gz),
# PAGES=400, REPS=3, BEFORE=c61cfcc. Stopped (Ctrl-C, timeout), it prints
# the figures measured so far.
#
# PROFILE=DIR writes CPU profiles of this tree's first crawl of each site
# with characterization off and on (DIR/crawl-SITE-off.prof, -on.prof;
# WAYSIDE_CPUPROFILE) and of `wayside characterize` (DIR/characterize.prof):
# `go tool pprof -top DIR/crawl-warcsite-on.prof`. The script prints the
# CPU-seconds of each profile spent in siegfried (github.com/richardlehane/...)
# and in the garbage collector, and the least the crawl's throughput can drop
# with siegfried's matcher alone: off / (off + siegfried's seconds when on). Profiling adds a little CPU to the runs it profiles.
#
#   scripts/bench-characterize.sh              # short; generates /tmp/bench-48.warc.gz if missing
#   LONG=1 scripts/bench-characterize.sh       # long; generates /tmp/bench.warc.gz if missing
#   WARC=/path/file.warc.gz REPS=5 BEFORE=main PAGES=400 SIZE=262144 scripts/bench-characterize.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/benchlib.sh
LONG=${LONG:-}
WARC=${WARC:-$(bench_long /tmp/bench.warc.gz /tmp/bench-48.warc.gz)}
SHARED=${SHARED:-../shared}
PAGES=${PAGES:-$(bench_long 400 100)}
SIZE=${SIZE:-262144}
PARALLEL=${PARALLEL:-4}
REPS=${REPS:-3}
BEFORE=${BEFORE-$(bench_long c61cfcc "")}
PROFILE=${PROFILE:-}
bins="after"
[ -z "$BEFORE" ] || bins="before after"
[ -z "$PROFILE" ] || { mkdir -p "$PROFILE"; PROFILE=$(cd "$PROFILE" && pwd); rm -f "$PROFILE"/crawl-*.prof "$PROFILE"/characterize.prof; }
if [ ! -f "$WARC" ]; then
  echo "bench-characterize: generating $WARC with $SHARED/tools/warcgen" >&2
  tmp=${WARC%.warc.gz}.tmp.warc.gz # warcgen compresses what ends so
  (cd "$SHARED/tools/warcgen" && go run . -o "$tmp" $(bench_long "" "-size-mb 48"))
  mv "$tmp" "$WARC"
  mv "$tmp.stats.json" "$WARC.stats.json" 2>/dev/null || true
fi
command -v /usr/bin/time >/dev/null || { echo "bench-characterize: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
work=$(mktemp -d)
pids=()
: >"$work/results"
: >"$work/char"

# summary: the figures measured so far (characterize vs the cdxj floor;
# crawl medians with characterization off and on), and the ratio line.
summary() {
  [ ! -s "$work/char" ] || cat "$work/char"
  awk -v bins="$bins" '
    { k = $1 " " $2 " " $3; v[k, ++n[k]] = $4; cpu[k, n[k]] = $5; rss[k, n[k]] = $6; raw[k, n[k]] = $7 }
    function median(a, k,   m, i, j, t, x) {
      m = n[k]; for (i = 1; i <= m; i++) x[i] = a[k, i];
      for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
      return (m % 2) ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2 }
    END {
      split("warcsite benchsite", sites, " "); nb = split(bins, bn, " ");
      for (s = 1; s <= 2; s++) {
        for (b = 1; b <= nb; b++) {
          off = sites[s] " " bn[b] " off"; on = sites[s] " " bn[b] " on";
          if (!n[off] || !n[on]) continue
          printf "  crawl %s (median of %d): %-6s off %6.1f raw MB/CPU-s (%5.2f CPU-s, RSS %4d MB)   on %6.1f raw MB/CPU-s (%5.2f CPU-s, RSS %4d MB)   %.1f%% lower (target: at most 30%%)\n",
            sites[s], n[on], bn[b], median(v, off), median(cpu, off), median(rss, off), median(v, on), median(cpu, on), median(rss, on), (1 - median(v, on) / median(v, off)) * 100
        }
      }
    }' "$work/results" | tee "$work/crawls"
  local out="" c w bs
  c=$(sed -n 's/^  wayside characterize (after *) *[0-9.]* CPU-s *\([0-9.]*\) raw MB\/CPU-s.*(\([0-9.]*x\) the floor.*/characterize \1 raw MB\/CPU-s = \2 the cdxj floor'"'"'s CPU (target >= 50)/p' "$work/char")
  w=$(sed -n 's/^  crawl warcsite .* after .* \([0-9.]*%\) lower.*/\1/p' "$work/crawls")
  bs=$(sed -n 's/^  crawl benchsite .* after .* \([0-9.]*%\) lower.*/\1/p' "$work/crawls")
  out=$c
  [ -z "$w$bs" ] || out="$out${out:+; }crawl with --characterize ${w:+warcsite $w lower}${w:+${bs:+, }}${bs:+benchsite $bs lower} (target <= 30%)"
  echo "bench-characterize ratio: ${out:-nothing measured yet ($_bench_step)}"
}
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  # A crawl stopped with the script may still be closing its WARC.
  rm -rf "$work" 2>/dev/null || { sleep 1; rm -rf "$work"; }
}
bench_exit_hooks bench-characterize summary cleanup
echo "bench-characterize: $(bench_long long short) form: $WARC, PAGES=$PAGES REPS=$REPS BEFORE=${BEFORE:-none}"
bench_step "building"
go build -o "$work/after" ./cmd/wayside
if [ -n "$BEFORE" ]; then
  mkdir "$work/src-before"
  git archive "$BEFORE" | tar -x -C "$work/src-before"
  (cd "$work/src-before" && go build -o "$work/before" ./cmd/wayside)
fi
go build -o "$work/benchsite" ./crawl/sitetest/benchsite
go build -o "$work/warcsite" ./scripts/warcsite

# measure LABEL CMD...: runs CMD under /usr/bin/time; sets cpu and rssmb.
measure() {
  local label=$1; shift
  /usr/bin/time -f "%U %S %M" -o "$work/$label.time" "$@" >"$work/$label.out" 2>"$work/$label.err"
  read -r u s rss <"$work/$label.time"
  cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
  rssmb=$(awk -v r="$rss" 'BEGIN { printf "%.0f", r / 1024 }')
}

raw=$(gzip -dc "$WARC" | wc -c)
echo "== wayside characterize on $WARC ($(awk -v r="$raw" 'BEGIN { printf "%.1f", r/1e6 }') raw MB); before = ${BEFORE:-none}"
bench_step "measuring characterize and its floor"
measure cdxj "$work/after" cdxj -q -j 1 -o "$work/x.cdxj" "$WARC"
awk -v raw="$raw" -v c="$cpu" -v r="$rssmb" 'BEGIN {
  printf "  wayside cdxj (floor)          %6.2f CPU-s  %6.1f raw MB/CPU-s  peak RSS %4d MB\n", c, raw/1e6/c, r }' | tee -a "$work/char"
floor=$cpu
for bin in $bins; do
  prof=()
  [ -n "$PROFILE" ] && [ "$bin" = after ] && prof=(env "WAYSIDE_CPUPROFILE=$PROFILE/characterize.prof")
  measure "char-$bin" "${prof[@]}" "$work/$bin" characterize -q -j 1 "$WARC"
  awk -v raw="$raw" -v c="$cpu" -v r="$rssmb" -v f="$floor" -v b="$bin" 'BEGIN {
    printf "  wayside characterize (%-6s) %6.2f CPU-s  %6.1f raw MB/CPU-s  peak RSS %4d MB  (%.2fx the floor'"'"'s CPU; target >= 50 MB/CPU-s)\n", b, c, raw/1e6/c, r, c/f }' | tee -a "$work/char"
done
grep -E "records|UNKNOWN" "$work/char-after.out" | head -3 | sed 's/^/  /'

# start NAME CMD...: starts a site server, sets url.
start() {
  local name=$1; shift
  "$@" >"$work/$name.url" 2>"$work/$name.log" &
  pids+=($!)
  for _ in $(seq 600); do [ -s "$work/$name.url" ] && break; sleep 0.1; done
  [ -s "$work/$name.url" ] || { echo "bench-characterize: $name did not start:" >&2; cat "$work/$name.log" >&2; exit 1; }
  url=$(head -1 "$work/$name.url")
}

# crawl SITE URL BIN on|off [crawl flags]: one crawl; appends "SITE BIN STATE MB/CPU-s CPU RSS RAW" to results.
crawl() {
  local site=$1 u=$2 bin=$3 state=$4; shift 4
  local dir="$work/warcs-$site-$bin-$state" flags=()
  rm -rf "$dir"
  [ "$state" = on ] && flags=(--characterize)
  local prof=()
  if [ -n "$PROFILE" ] && [ "$bin" = after ] && [ ! -e "$PROFILE/crawl-$site-$state.prof" ]; then
    prof=(env "WAYSIDE_CPUPROFILE=$PROFILE/crawl-$site-$state.prof")
  fi
  measure "crawl-$site-$bin-$state" "${prof[@]}" "$work/$bin" crawl --quiet --delay 0 --parallel "$PARALLEL" --max-pages 0 --warc-dir "$dir" "${flags[@]}" "$@" "$u"
  local r
  r=$(cat "$dir"/*.warc.gz | gzip -dc | wc -c)
  echo "$site $bin $state $(awk -v r="$r" -v c="$cpu" 'BEGIN { printf "%.2f", r/1e6/c }') $cpu $rssmb $r" >>"$work/results"
  if [ "$state" = on ] && ! grep -q "characterized" "$work/crawl-$site-$bin-$state.out"; then
    echo "bench-characterize: no characterization summary from $bin:" >&2; cat "$work/crawl-$site-$bin-$state.out" >&2; exit 1
  fi
}

bench_step "crawling"
start warcsite "$work/warcsite" "$WARC"
warcsite_url=$url
start benchsite "$work/benchsite" -pages "$PAGES" -size "$SIZE"
benchsite_url=$url
echo "== wayside crawl, characterization off vs on, $REPS runs each, interleaved; --parallel $PARALLEL"
echo "   warcsite: $(tail -1 "$work/warcsite.log" | sed 's/^warcsite: //; s/, on http.*//')"
echo "   benchsite: $PAGES resources of $SIZE bytes"
for i in $(seq "$REPS"); do
  for bin in $bins; do
    for state in off on; do
      # --depth 2: the root, its index pages and the resources they list
      # (the HTML payloads' own links point at the original hosts or at
      # paths the site does not serve).
      crawl warcsite "$warcsite_url" "$bin" "$state" --depth 2
      crawl benchsite "$benchsite_url" "$bin" "$state"
    done
  done
done
grep -h "characterized" "$work"/crawl-*-after-on.out | sort -u | sed 's/^ */  after: /'
if [ -n "$PROFILE" ]; then
  echo "== CPU profiles in $PROFILE (this tree; CPU-seconds sampled)"
  # seconds PROF FOCUS: CPU-seconds of PROF's samples whose stacks match FOCUS.
  seconds() {
    go tool pprof -top -nodefraction=0 -nodecount=1000000 -focus="$2" "$1" 2>/dev/null |
      sed -n 's/.*Showing nodes accounting for \([0-9.]*\)\(m*s\)*, .*/\1 \2/p' | head -1 |
      awk '{ s = ($2 == "ms") ? $1 / 1000 : $1 } END { printf "%.2f", s }'
  }
  total() {
    go tool pprof -top -nodecount=1 "$1" 2>/dev/null | sed -n 's/.*Total samples = \([0-9.]*\)\(m*s\) .*/\1 \2/p' |
      awk '{ printf "%.2f", ($2 == "ms") ? $1 / 1000 : $1 }'
  }
  for p in "$PROFILE"/*.prof; do
    printf "  %-28s %6s CPU-s: siegfried %5s, GC %5s\n" "$(basename "$p")" "$(total "$p")" \
      "$(seconds "$p" richardlehane)" "$(seconds "$p" runtime.gcBgMarkWorker)"
  done
  # The floor siegfried sets: the crawl without characterization plus only
  # the CPU siegfried's own code took in the crawl with it.
  for site in warcsite benchsite; do
    off="$PROFILE/crawl-$site-off.prof" on="$PROFILE/crawl-$site-on.prof"
    [ -f "$off" ] && [ -f "$on" ] || continue
    awk -v site="$site" -v off="$(total "$off")" -v sf="$(seconds "$on" richardlehane)" 'BEGIN {
      printf "  %s: siegfried alone (%.2f CPU-s over the crawl'"'"'s %.2f) makes the crawl at least %.1f%% lower (target: at most 30%%)\n",
        site, sf, off, (1 - off / (off + sf)) * 100 }'
  done
fi
