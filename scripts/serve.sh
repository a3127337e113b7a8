#!/usr/bin/env bash
# scripts/serve.sh runs `cdpguard serve` on a fresh Debian machine with Go:
# it installs Debian's chromium first when it is missing. Arguments go to
# `cdpguard serve` (for example --allow example.com).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
exec go run ./cmd/cdpguard serve "$@"
