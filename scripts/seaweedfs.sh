#!/usr/bin/env bash
# Builds SeaweedFS's `weed` (the real S3-compatible server the object-storage
# tests run on loopback) from its Go module at the pinned version, once, into
# a cache directory; prints the binary's path. `go install …@version` refuses
# the module (its go.mod has replace directives), so the module is downloaded
# and built inside a writable copy. The build takes many minutes on 2 cores:
# a complete binary is reused.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=github.com/seaweedfs/seaweedfs
ver=v0.0.0-20261109003541-7506e5f91cd6
dir=${WAYSIDE_SEAWEEDFS:-${XDG_CACHE_HOME:-$HOME/.cache}/wayside/seaweedfs-$ver}
if [ ! -x "$dir/weed" ] || [ ! -f "$dir/.complete" ]; then
  echo "seaweedfs.sh: building weed $ver into $dir (takes minutes)" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  src=$(GOFLAGS=-mod=mod go mod download -json "$mod@$ver" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$src" ] || { echo "seaweedfs.sh: go mod download $mod@$ver gave no directory" >&2; exit 1; }
  work=$(mktemp -d)
  trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
  cp -r "$src" "$work/src"
  chmod -R u+w "$work/src"
  (cd "$work/src" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -o "$dir/weed" ./weed >&2)
  touch "$dir/.complete"
fi
echo "$dir/weed"
