#!/usr/bin/env bash
# scripts/lint.sh runs the static checks CI runs: go vet, staticcheck (its
# default checks, which include unused unexported code) and deadcode -test
# (functions, exported or not, that neither a command nor a test reaches).
# The tools are pinned and fetched by `go run` from the module proxy, so run
# this outside the test network namespace (scripts/test.sh does).
set -euo pipefail
cd "$(dirname "$0")/.."

go vet ./...
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
dead=$(go run golang.org/x/tools/cmd/deadcode@v0.52.0 -test ./...)
if [ -n "$dead" ]; then
  printf '%s\n' "$dead"
  echo "scripts/lint.sh: dead code above (remove it, or use it)" >&2
  exit 1
fi
