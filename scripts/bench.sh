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
exec unshare --net -- bash -c 'ip link set lo up && go run ./e2e/bench "$@"' _ "$@"
