#!/usr/bin/env bash
# scripts/bench.sh runs the cdpguard bench (e2e/bench: cdpguard vs direct
# Chromium, interleaved) inside a private network namespace with only
# loopback up, as the tests run, so nothing a bench browser does can leave
# the machine. Extra arguments go to the bench (e.g. -json, -workloads=load,
# -cpuprofile=/tmp/guard.pprof); see `go run ./e2e/bench -h`.
set -euo pipefail
cd "$(dirname "$0")/.."
go mod download
# Inside the namespace nothing can be downloaded: fail fast instead of hanging.
export GOPROXY=off GOFLAGS=-mod=readonly
# Built first and exec'd (not `go run`, which does not pass SIGTERM on), so
# a signal to this script reaches the bench and its browsers stop with it.
bin_dir="${CDPGUARD_BIN_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/cdpguard/bin}"
mkdir -p "$bin_dir"
go build -o "$bin_dir/cdpguard-bench" ./e2e/bench
exec unshare --net -- bash -c 'ip link set lo up && exec "$0" "$@"' "$bin_dir/cdpguard-bench" "$@"
