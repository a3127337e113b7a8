#!/usr/bin/env bash
# scripts/test.sh runs every cdpguard test on a fresh Debian machine with Go,
# as root: it installs what the tests need (Debian's chromium, the e2e npm
# packages, the Go modules) and then runs `go test -race ./...` inside a
# private network namespace with only loopback up, so nothing a test browser
# does can leave the machine. Extra arguments go to `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v unshare >/dev/null 2>&1 || need_apt+=(util-linux)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs npm)
command -v haproxy >/dev/null 2>&1 || need_apt+=(haproxy)
command -v Xvfb >/dev/null 2>&1 || need_apt+=(xvfb)       # headed e2e (e2e/headed)
command -v xdotool >/dev/null 2>&1 || need_apt+=(xdotool) # the human's real X input
if [ ${#need_apt[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

(cd e2e && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
go mod download
(cd deploy && go mod download) # deploy/ is its own module (Kubernetes types)
# vet, staticcheck, dead code: outside the namespace (it downloads its
# tools), beside the tests, at the lowest CPU priority. On a fresh machine
# it costs about 440 CPU-seconds (its non-race build 190, staticcheck 150,
# vet 50, deadcode 45) against the tests' few browsers, which mostly wait:
# niced, it takes the cores they leave idle instead of slowing their
# timed bounds. Its vet also stands in for a plain `go build ./...`. It
# prints only what it finds, shown once the tests end.
lint_log=$(mktemp)
work=$(mktemp -d) # the test streams (below)
nice -n 19 bash scripts/lint.sh >"$lint_log" 2>&1 &
lint_pid=$!
# The trap must not fail: under set -e a failing command in an EXIT trap
# (kill of a lint that already ended) turns the run's status into 1.
trap 'kill "$lint_pid" 2>/dev/null || true; rm -rf "$lint_log" "$work"' EXIT

export CDPGUARD_E2E="${CDPGUARD_E2E:-1}"
# The reader's labelled corpora are data that is never committed (one corpus
# forbids redistribution); scripts/reader-corpora.sh fetches them. When the
# steering repo's shared/ holds them, TestReaderEvalSample scores the CI
# sample; without them it skips and says so.
if [ -z "${CDPGUARD_READER_CORPORA:-}" ] && [ -d ../shared/corpora/reader ]; then
  CDPGUARD_READER_CORPORA="$(cd ../shared/corpora/reader && pwd)"
  export CDPGUARD_READER_CORPORA
fi
# Inside the namespace nothing can be downloaded: fail fast instead of hanging.
export GOPROXY=off GOFLAGS=-mod=readonly
# With extra arguments (`scripts/test.sh -run TestX`), one go test run takes
# them. Without, the e2e package runs as two processes of one test binary,
# side by side (CI wall time): its timed suites, one at a time because they
# measure latencies and bounds (they never call t.Parallel), and all its
# other suites, three at a time (-parallel 3: they mostly wait on browsers,
# using about a third of a core each). Beside them go test runs every other
# package, the longest named first (go test starts packages in the order
# given). deploy/ (its own module) is checked first. Each stream is kept in
# a file; testreport reads them all at the end and prints the failing
# tests' output, the slowest tests, then the package ok/FAIL lines last.
timed='^(TestFirewallBadInput|TestBounds|TestMCPModelTasks|TestReaderEvalSample|TestRedTeamControls|TestRedTeamToday|TestSlowConsumer)$'
test_rc=0
if [ $# -gt 0 ]; then
  unshare --net -- bash -c 'set -o pipefail; ip link set lo up && (cd deploy && go test -count=1 -timeout 5m ./...) && go test -json -race -count=1 -timeout 30m "$@" ./... | go run ./scripts/testreport' _ "$@" || test_rc=$?
else
  go test -race -c -o "$work/e2e.test" ./e2e/
  others="./cdpguard/ ./e2e/bench/ ./internal/browser/ $(go list ./... | grep -v '/e2e$' | tr '\n' ' ')"
  W="$work" T="$timed" O="$others" unshare --net -- bash -c '
    set -o pipefail
    ip link set lo up
    (cd deploy && go test -count=1 -timeout 5m ./...) || exit 1
    e2e() { # stream, package suffix, flags: one run of the e2e binary, reported as go test -json would
      local out="$W/$1.json" pkg="github.com/cdpguard/cdpguard/e2e$2"
      shift 2
      {
        start=$SECONDS
        rc=0
        (cd e2e && "$W/e2e.test" -test.v=test2json -test.paniconexit0 -test.count=1 -test.timeout=30m "$@" 2>&1) || rc=$?
        if [ "$rc" -eq 0 ]; then printf "ok  \t%s\t%ds\n" "$pkg" $((SECONDS - start)); else printf "FAIL\t%s\t%ds\n" "$pkg" $((SECONDS - start)); fi
        exit "$rc"
      } | go tool test2json -t -p "$pkg" >"$out"
    }
    e2e e2e-timed " (timed suites)" -test.run "$T" &
    timed=$!
    e2e e2e "" -test.skip "$T" -test.parallel=3 &
    rest=$!
    rc=0
    go test -json -race -count=1 -timeout 30m $O >"$W/others.json" || rc=$?
    wait "$rest" || rc=$?
    wait "$timed" || rc=$?
    exit "$rc"
  ' || test_rc=$?
  cat "$work/others.json" "$work/e2e.json" "$work/e2e-timed.json" 2>/dev/null | go run ./scripts/testreport
fi
lint_rc=0
wait "$lint_pid" || lint_rc=$?
if [ "$lint_rc" -ne 0 ]; then
  cat "$lint_log"
  echo "scripts/test.sh: scripts/lint.sh failed (exit $lint_rc)" >&2
fi
if [ "$test_rc" -ne 0 ]; then exit "$test_rc"; fi
exit "$lint_rc"
