#!/usr/bin/env bash
# scripts/serve.sh runs `cdpguard serve` on a fresh Debian machine with Go:
# it installs Debian's chromium first when it is missing. Arguments go to
# `cdpguard serve` (for example --allow example.com).
#
# The binary is built into a cache folder outside the work tree and then
# exec'd, so this script's process *becomes* cdpguard: SIGTERM and SIGINT
# sent to it (a process manager, `docker stop`, a CI job) reach cdpguard
# itself, which stops its Chromium and exits. (`go run` would not pass
# SIGTERM on to the program it starts.)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
bin_dir="${CDPGUARD_BIN_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/cdpguard/bin}"
mkdir -p "$bin_dir"
go build -o "$bin_dir/cdpguard" ./cmd/cdpguard
exec "$bin_dir/cdpguard" serve "$@"
