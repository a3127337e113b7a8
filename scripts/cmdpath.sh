#!/usr/bin/env bash
# scripts/cmdpath.sh lists the guard's files that run while one agent
# command crosses it (e2e/bench/cmdpath, built with coverage), inside a
# private network namespace as the tests run. Arguments go to cmdpath,
# e.g. -method Page.navigate -params '{"url":"$PAGE"}'; the default is
# Runtime.evaluate of 1+1.
set -euo pipefail
cd "$(dirname "$0")/.."
bin_dir=$(mktemp -d)
trap 'rm -rf "$bin_dir"' EXIT
go build -cover -covermode=atomic -coverpkg=github.com/cdpguard/cdpguard/... -o "$bin_dir/cmdpath" ./e2e/bench/cmdpath
mkdir "$bin_dir/cover"
export GOCOVERDIR="$bin_dir/cover" # the counters of the process's exit, unused
unshare --net -- bash -c 'ip link set lo up && exec "$@"' _ "$bin_dir/cmdpath" "$@"
