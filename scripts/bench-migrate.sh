#!/usr/bin/env bash
# bench-migrate.sh — `wayside migrate`: locating at-risk records through the
# characterization store versus a full scan, and migrations per minute per
# default pathway (scripts/migratebench).
#
# The collection is the warcgen benchmark WARC (SIZE_MB of uncompressed data;
# the default 200 gives more than 10,000 records; 180 gave 9,955) plus a WARC of COPIES
# objects of each legacy format made with ImageMagick, FFmpeg and
# Ghostscript. Both figures come from the same run:
#   - locate: the full scan identifies every record of every file; the
#     store query reads the per-container aggregates and then only the
#     records of containers holding a selected format. Printed: wall time
#     and entities examined each way, and their ratios.
#   - migrate: objects converted and validated per minute, per pathway
#     (OFFICE_COPIES office documents, default 3: LibreOffice is slow).
#
#   scripts/bench-migrate.sh                 # SIZE_MB=200 COPIES=8
#   SIZE_MB=400 COPIES=20 scripts/bench-migrate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB=${SIZE_MB:-200}
COPIES=${COPIES:-8}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gen="$(cd ../shared/tools/warcgen && pwd)"
(cd "$gen" && go run . -size-mb "$SIZE_MB" -o "$work/bulk.warc.gz" >/dev/null)
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
go run ./scripts/migratebench -collection "$work/bulk.warc.gz" -legacy-copies "$COPIES" -office-copies "${OFFICE_COPIES:-3}"
