#!/usr/bin/env bash
# Benchmarks `wayside wacz create` against js-wacz (npm @harvard-lil/js-wacz,
# the version pinned in internal/interop/js, installed by
# scripts/interop-js.sh) on the same input in the same run, and prints
# input megabytes packaged per CPU-second (user+sys, every thread) of
# each and their ratio; then the peak RSS of `wacz create` for the input
# and for four times the input (the same WARC under four names, symlinked),
# which should stay flat: memory does not grow with the input.
#
#   scripts/bench-wacz.sh            # the default warcgen WARC, /tmp/bench.warc.gz, generated if missing
#   WARC=/path/file.warc.gz scripts/bench-wacz.sh
#   SKIP_JS=1 scripts/bench-wacz.sh  # Wayside only
set -euo pipefail
cd "$(dirname "$0")/.."

WARC=${WARC:-/tmp/bench.warc.gz}
SHARED=${SHARED:-../shared}
if [ ! -f "$WARC" ]; then
  echo "bench-wacz: generating $WARC with $SHARED/tools/warcgen" >&2
  (cd "$SHARED/tools/warcgen" && go run . -o "$WARC")
fi
command -v /usr/bin/time >/dev/null || { echo "bench-wacz: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }

work=$(mktemp -d /tmp/bench-wacz.XXXXXX)
trap 'rm -rf "$work"' EXIT
bin=$work/wayside
go build -o "$bin" ./cmd/wayside
size=$(stat -c %s "$WARC")

# measure NAME CMD...: runs CMD under /usr/bin/time -v and prints
# "NAME cpu-seconds max-rss-kB".
measure() {
  local name=$1
  shift
  /usr/bin/time -v "$@" 2> "$work/$name.time" >/dev/null || { cat "$work/$name.time" >&2; exit 1; }
  awk -F': ' -v n="$name" '/User time/ {u=$2} /System time/ {s=$2} /Maximum resident set size/ {r=$2} END {printf "%s %.2f %d\n", n, u+s, r}' "$work/$name.time"
}

results=$work/results
measure wayside "$bin" wacz create -q --no-sign -o "$work/wayside.wacz" "$WARC" >> "$results"
if [ -z "${SKIP_JS:-}" ]; then
  jsdir=$(scripts/interop-js.sh)
  measure js-wacz node "$jsdir/node_modules/@harvard-lil/js-wacz/bin/cli.js" create --log-level error -f "$WARC" -o "$work/js.wacz" >> "$results"
fi
mkdir "$work/x4"
for i in 1 2 3 4; do ln -s "$(readlink -f "$WARC")" "$work/x4/copy$i.warc.gz"; done
rm -f "$work/wayside.wacz"
measure wayside-4x "$bin" wacz create -q --no-sign -o "$work/wayside4.wacz" "$work/x4" >> "$results"

awk -v size="$size" -v f="$WARC" '
  { cpu[$1] = $2; rss[$1] = $3 }
  END {
    mb = size / 1e6
    printf "input               %s (%.1f MB)\n", f, mb
    printf "wayside wacz create %.1f MB per CPU-second (%.2f CPU-s), peak RSS %.1f MB\n", mb / cpu["wayside"], cpu["wayside"], rss["wayside"] / 1024
    if ("js-wacz" in cpu) {
      printf "js-wacz 0.1.6       %.1f MB per CPU-second (%.2f CPU-s), peak RSS %.1f MB\n", mb / cpu["js-wacz"], cpu["js-wacz"], rss["js-wacz"] / 1024
      printf "ratio               wayside / js-wacz = %.2fx the throughput\n", cpu["js-wacz"] / cpu["wayside"]
    }
    printf "wayside 4x input    %.1f MB: %.1f MB per CPU-second, peak RSS %.1f MB (%.2fx the 1x peak)\n", 4 * mb, 4 * mb / cpu["wayside-4x"], rss["wayside-4x"] / 1024, rss["wayside-4x"] / rss["wayside"]
  }' "$results"
