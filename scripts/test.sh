#!/usr/bin/env bash
# Runs Wayside's test suite on a fresh machine: installs what the tests need
# (Chromium for fixity replays, Redis for the networked index, node with the
# pinned warcio.js and wabac.js for the interop tests) when missing, then
# vets, checks formatting and runs every test with the race detector.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
# systemd-analyze verifies examples/systemd/wayside.service.
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
# The converters of `wayside migrate`'s default pathways (and prlimit and
# unshare of its sandbox, from util-linux).
command -v convert-im6.q16 >/dev/null 2>&1 || command -v magick >/dev/null 2>&1 || need+=(imagemagick)
command -v ffmpeg >/dev/null 2>&1 || need+=(ffmpeg)
command -v gs >/dev/null 2>&1 || need+=(ghostscript)
command -v prlimit >/dev/null 2>&1 || need+=(util-linux)
# LibreOffice headless for the office pathways (Word, Excel, PowerPoint,
# RTF to PDF/A): the -nogui builds, no desktop stack.
command -v soffice >/dev/null 2>&1 || need+=(libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui)
if [ ${#need[@]} -gt 0 ]; then
  echo "test.sh: installing ${need[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

step() { echo "test.sh: $*" >&2; }
go version
step "interop tools: node, warcio.js and wabac.js (scripts/interop-js.sh)"
WAYSIDE_INTEROP_JS=$(scripts/interop-js.sh)
export WAYSIDE_INTEROP_JS
if [ -d ../shared/corpus ]; then
  step "../shared found: tests use its real WARC/ARC corpus and reference maps"
else
  step "WARNING: ../shared is absent: tests that need the shared corpus will be SKIPPED (listed at the end)"
fi
# The object-storage tests run a real S3-compatible server: SeaweedFS's weed,
# built from its Go module once and cached (scripts/seaweedfs.sh; the first
# build takes many minutes on 2 cores).
step "SeaweedFS for the S3 tests (scripts/seaweedfs.sh)"
WAYSIDE_SEAWEEDFS_BIN=$(scripts/seaweedfs.sh)
export WAYSIDE_SEAWEEDFS_BIN
if [ -d ../shared/tools/memgator ]; then
  # The Memento tests compare Wayside's TimeMaps with MemGator's (built
  # offline from its vendored source, once for every test).
  step "building MemGator from ../shared/tools/memgator"
  mgdir=$(mktemp -d)
  (cd ../shared/tools/memgator && GOFLAGS=-mod=vendor GOWORK=off go build -o "$mgdir/memgator" .)
  export WAYSIDE_MEMGATOR="$mgdir/memgator"
fi
step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2
  echo "$unformatted" >&2
  exit 1
fi
step "go vet"
go vet ./...
step "go build"
go build ./...
# Builds without cgo keep the pure-Go inflater (internal/libdeflate's
# fallback): the code and every test must still compile there.
step "go vet without cgo"
CGO_ENABLED=0 go vet ./...
report=$(mktemp -d)/testreport
go build -o "$report" ./internal/testreport
export WAYSIDE_REQUIRE_TOOLS=1
step "go test -race (a line per package as it finishes; counts at the end)"
go test -race -count=1 -timeout 40m -json "$@" ./... | "$report"
