#!/usr/bin/env bash
# scripts/test.sh runs every cdpguard test on a fresh Debian machine with Go,
# as root: it installs what the tests need (Debian's chromium, the e2e npm
# packages, the Go modules) and then runs `go test -race ./...` inside a
# private network namespace with only loopback up, so nothing a test browser
# does can leave the machine. Extra arguments go to `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."
# scripts/testreport prints when the longest packages ran, from here.
TESTREPORT_T0=$(date +%s.%N)
export TESTREPORT_T0

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

# The downloads run at once: npm's and Go's.
(cd e2e && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) &
npm_pid=$!
go mod download
# vet, staticcheck, dead code: outside the namespace (it downloads its
# tools), beside the tests. Warm, it costs about 30 to 70 CPU-seconds (vet
# and staticcheck of the packages that changed, deadcode about 17 every
# run: scripts/lint.sh reads the tests' own race build from the cache); its
# vet also stands in for a `go build ./...`. It starts here, at normal
# priority, while npm ci leaves a core idle, in a process group of its own;
# once the tests start it drops to the lowest priority (renice below), so
# that it takes only what the tests leave idle instead of slowing their
# bounds. Started with the tests at nice 19, it got nothing until they
# ended and ran alone after them for about 33 s of every run
# (docs/decisions/2026-12-07-ci-cpu.md). It prints only what it finds,
# shown once the tests end.
lint_log=$(mktemp)
deploy_log=$(mktemp)
setsid bash scripts/lint.sh >"$lint_log" 2>&1 &
lint_pid=$!
# The trap must not fail: under set -e a failing command in an EXIT trap
# (kill of a lint that already ended) turns the run's status into 1.
trap 'kill -- -"$lint_pid" 2>/dev/null || true; rm -f "$lint_log" "$deploy_log"' EXIT
# The daemon that e2e, e2e/bench and deploy/ run as a program is built once,
# here, while deploy/'s modules download: when each package built its own,
# three cold builds ran at once beside the race build on a fresh machine and
# two of them hit their bounds. The tests take it from CDPGUARD_TEST_BIN (a
# directory every user can read: deploy/ runs it as the image's uid).
bin_dir=$(mktemp -d)
chmod 755 "$bin_dir"
trap 'kill -- -"$lint_pid" 2>/dev/null || true; rm -f "$lint_log" "$deploy_log"; rm -rf "$bin_dir"' EXIT
go build -o "$bin_dir/cdpguard" ./cmd/cdpguard &
build_pid=$!
(cd deploy && go mod download) # deploy/ is its own module (Kubernetes types)
wait "$npm_pid"
wait "$build_pid"
export CDPGUARD_TEST_BIN="$bin_dir/cdpguard"
# The tests start: lint (every process of its group, and what they start
# from now on) drops to the lowest priority.
renice -n 19 -g "$lint_pid" >/dev/null 2>&1 || true

export CDPGUARD_E2E="${CDPGUARD_E2E:-1}"
# The reader's labelled corpora are data that is never committed (one corpus
# forbids redistribution); scripts/reader-corpora.sh fetches them. When the
# steering repo's shared/ holds them, TestTimed/ReaderEvalSample scores the CI
# sample; without them it skips and says so.
if [ -z "${CDPGUARD_READER_CORPORA:-}" ] && [ -d ../shared/corpora/reader ]; then
  CDPGUARD_READER_CORPORA="$(cd ../shared/corpora/reader && pwd)"
  export CDPGUARD_READER_CORPORA
fi
# Inside the namespace nothing can be downloaded: fail fast instead of hanging.
export GOPROXY=off GOFLAGS=-mod=readonly
# deploy/ (its own module) is checked first; then testreport prints what
# plain go test prints, the slowest tests, then the package ok/FAIL lines
# last; pipefail keeps go test's exit status.
# The longest packages are named first: go test starts packages in the order
# given (then ./... adds the rest once each), so e2e, the longest by far,
# starts at once and the others fill the second slot around it. The e2e
# package runs its timed suites first (TestTimed, three at a time), then the
# others three at a time, longest first (e2e/suitegate_test.go): a run with the
# timed suites beside three others failed their bounds, and the others
# wait on their pages more than they compute
# (docs/decisions/2026-12-02-ci-time.md).
# go test's own vet is off (-vet=off): scripts/lint.sh, started above and
# always waited for below, runs `go vet ./...` over the same -race build of
# every package and its tests with all of vet's default analyzers, of which
# go test's are a subset. On a fresh machine go test's vet cost about 25
# CPU-seconds (the facts of every dependency, cdproto's included), ahead of
# e2e's start (docs/decisions/2026-12-08-ci-cold.md).
# deploy/'s tests (its own module) run beside them, a little niced, their
# output shown at the end: first, on a fresh machine, their build of the
# Kubernetes types (46 s) and their run (24 s) held back the e2e build.
test_rc=0
unshare --net -- bash -c '
  set -o pipefail
  deploy_log=$1
  shift
  ip link set lo up || exit 1
  (cd deploy && nice -n 5 go test -count=1 -timeout 5m ./... >"$deploy_log" 2>&1) &
  deploy_pid=$!
  rc=0
  go test -json -race -vet=off -count=1 -timeout 30m "$@" ./e2e/ ./cdpguard/ ./e2e/bench/ ./... | go run ./scripts/testreport || rc=$?
  deploy_rc=0
  wait "$deploy_pid" || deploy_rc=$?
  cat "$deploy_log"
  if [ "$deploy_rc" -ne 0 ]; then
    echo "scripts/test.sh: deploy/ tests failed (exit $deploy_rc)" >&2
    [ "$rc" -ne 0 ] || rc=$deploy_rc
  fi
  exit "$rc"
' _ "$deploy_log" "$@" || test_rc=$?
lint_rc=0
wait "$lint_pid" || lint_rc=$?
if [ "$lint_rc" -ne 0 ]; then
  cat "$lint_log"
  echo "scripts/test.sh: scripts/lint.sh failed (exit $lint_rc)" >&2
fi
if [ "$test_rc" -ne 0 ]; then exit "$test_rc"; fi
exit "$lint_rc"
