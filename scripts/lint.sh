#!/usr/bin/env bash
# scripts/lint.sh runs the static checks CI runs: go vet, staticcheck (its
# default checks, which include unused unexported code) and deadcode -test
# (functions, exported or not, that neither a command nor a test reaches).
# The tools are pinned and fetched from the module proxy, so run this
# outside the test network namespace (scripts/test.sh does).
#
# vet and staticcheck look at the -race build, the one the tests compile:
# the type information they need is then the tests' own compiled packages
# from the build cache instead of a second, plain build of every package
# (on a fresh machine, beside the tests, the plain build cost about 130
# CPU-seconds; no file in the module depends on the race tag). The tools
# themselves are built plainly (GOFLAGS=-race would instrument them and
# double their run time), into a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."

tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
GOBIN="$tools" go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOBIN="$tools" go install golang.org/x/tools/cmd/deadcode@v0.52.0

race="${GOFLAGS:+$GOFLAGS }-race"
GOFLAGS="$race" go vet ./...
GOFLAGS="$race" "$tools/staticcheck" ./...
dead=$("$tools/deadcode" -test ./...)
if [ -n "$dead" ]; then
  printf '%s\n' "$dead"
  echo "scripts/lint.sh: dead code above (remove it, or use it)" >&2
  exit 1
fi
