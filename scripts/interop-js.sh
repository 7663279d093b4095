#!/usr/bin/env bash
# Installs the third-party JavaScript tools the interop tests
# (internal/interop) run on Wayside's output: warcio.js and wabac.js, at the
# exact versions pinned in internal/interop/js/package-lock.json, with
# `npm ci` into a cache directory named after the lock file's hash (the test
# computes the same name). Installs Debian's nodejs and npm first when
# missing. Prints the directory. Idempotent: a complete install is reused.
set -euo pipefail
cd "$(dirname "$0")/.."
src=internal/interop/js
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "interop-js.sh: installing nodejs and npm" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi
hash=$(sha256sum "$src/package-lock.json" | cut -c1-12)
dir=${WAYSIDE_INTEROP_JS:-${XDG_CACHE_HOME:-$HOME/.cache}/wayside/interop-js-$hash}
if [ ! -f "$dir/.complete" ]; then
  echo "interop-js.sh: npm ci into $dir" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$src/package.json" "$src/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
  touch "$dir/.complete"
fi
echo "$dir"
