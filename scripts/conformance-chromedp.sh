#!/usr/bin/env bash
# scripts/conformance-chromedp.sh runs chromedp's own test suite (the
# module version go.mod names, from the Go module cache) against a plain
# Chromium ("direct") and through `cdpguard serve` ("guard"), and writes
# one line per test and mode: docs/conformance/chromedp.md explains the
# run and records its figures.
#
# The suite is copied out of the module cache into a work directory and
# patched there, never in this repository: one file is added to the copy
# (conformance_patch_test.go, written below) and TestMain calls it.
#   - Both modes: the tests' pages (chromedp's testdata/) are served over
#     HTTP on loopback instead of file:, which the guard refuses by design;
#     the two modes run the same pages.
#   - guard: the suite's allocator (allocCtx) attaches to the guard's
#     endpoint instead of starting a browser (an Allocator with a WebSocket
#     transport, as chromedp/remote's, which the core package's tests cannot
#     import). Tests that start browsers of their own (allocate_test.go,
#     pipe_test.go, ...) start them directly in every mode.
#   - remote: the guard mode's allocator against a plain Chromium with a
#     debugging port, to tell what attaching changes from what the guard
#     changes.
#
# Usage: scripts/conformance-chromedp.sh [-run REGEXP] [-skip REGEXP] [-mode direct|remote|guard|both|all]
# Environment: WORK (default /tmp/chromedp-conformance), CHROME_PATH
# (default /usr/bin/chromium), TIMEOUT (go test -timeout, default 20m),
# CDPGUARD_BIN (a cdpguard binary to use; default: built from this tree,
# uncommitted changes included).
# Output: $WORK/results/{direct,remote,guard}.tsv (test, outcome),
# diff.tsv and remote-diff.tsv (the tests whose outcome through the guard
# differs), the go test logs beside them, the guard's log in guard.log.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

run='.'
# Skipped by default in every mode: served over HTTP, the page that
# NavigateBack, NavigateForward and NavigateToHistoryEntry return to comes
# from Chrome's back/forward cache (Cache-Control: no-store does not keep
# it out in Chromium 156), whose restore fires no Page.loadEventFired,
# and chromedp's actions wait for one without a bound: the test hangs
# until go test's -timeout kills the whole run. Over file: (the suite's
# own way) they pass direct.
skip='^(TestNavigateBack|TestNavigateForward|TestNavigateToHistoryEntry)$'
# Skipped as well when attached (remote, guard): TestExecAllocatorKillBrowser
# signals the browser process, which an attached allocator has none of (a
# nil dereference ends the whole test binary). Through the guard:
# TestDownloadIntoDir, which waits without a bound for a completed
# download, and the guard denies downloads without --download-dir.
attached_skip='TestExecAllocatorKillBrowser'
guard_skip='TestDownloadIntoDir'
mode=both
while [ $# -gt 0 ]; do
	case "$1" in
	-run) run="$2"; shift 2 ;;
	-skip) skip="$2"; attached_skip=''; guard_skip=''; shift 2 ;;
	-mode) mode="$2"; shift 2 ;;
	*) echo "usage: $0 [-run REGEXP] [-skip REGEXP] [-mode direct|remote|guard|both|all]" >&2; exit 2 ;;
	esac
done
work="${WORK:-/tmp/chromedp-conformance}"
chrome="${CHROME_PATH:-/usr/bin/chromium}"
timeout="${TIMEOUT:-20m}"

version=$(go list -m -f '{{.Version}}' github.com/chromedp/chromedp)
go mod download github.com/chromedp/chromedp
src=$(go list -m -f '{{.Dir}}' github.com/chromedp/chromedp)
echo "chromedp $version from $src"

rm -rf "$work/src"
mkdir -p "$work/results"
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
cd "$work/src"

cat > conformance_patch_test.go <<'EOF'
package chromedp

// Added by cdpguard's scripts/conformance-chromedp.sh to a copy of the
// suite; not part of chromedp.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"

	"github.com/chromedp/cdproto"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/coder/websocket"
)

// conformanceAllocator serves testdata/ over HTTP (testdataDir) and
// returns the suite's allocator: the guard's endpoint when
// CONFORMANCE_REMOTE_URL names it, else the suite's own ExecAllocator.
func conformanceAllocator() (context.Context, context.CancelFunc) {
	srv := httptest.NewServer(http.FileServer(http.Dir("testdata")))
	testdataDir = srv.URL
	u := os.Getenv("CONFORMANCE_REMOTE_URL")
	if u == "" {
		ctx, cancel := NewExecAllocator(context.Background(), allocOpts...)
		return ctx, func() { cancel(); srv.Close() }
	}
	ctx, cancel := NewAllocatorContext(context.Background(), &wsAllocator{url: u})
	return ctx, func() { cancel(); srv.Close() }
}

// wsAllocator attaches to a running endpoint over a WebSocket, as
// chromedp/remote's Allocator does.
type wsAllocator struct {
	url string
	wg  sync.WaitGroup
}

func (a *wsAllocator) Attaches() bool { return true }
func (a *wsAllocator) Wait()          { a.wg.Wait() }

func (a *wsAllocator) Allocate(ctx context.Context, opts ...BrowserOption) (*Browser, error) {
	if FromContext(ctx) == nil {
		return nil, ErrInvalidContext
	}
	wsURL := a.url
	if !strings.HasPrefix(wsURL, "ws") {
		resp, err := http.Get(strings.TrimRight(wsURL, "/") + "/json/version")
		if err != nil {
			return nil, fmt.Errorf("json/version: %w", err)
		}
		var v struct {
			WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
		}
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("json/version: %w", err)
		}
		wsURL = v.WebSocketDebuggerURL
	}
	wctx, cancel := context.WithCancel(context.Background())
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		<-ctx.Done()
		Cancel(ctx)
		cancel()
	}()
	c, _, err := websocket.Dial(wctx, wsURL, nil)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", wsURL, err)
	}
	c.SetReadLimit(-1)
	return NewBrowserTransport(wctx, &wsTransport{c: c}, opts...)
}

// wsTransport is a Transport over github.com/coder/websocket.
type wsTransport struct {
	c  *websocket.Conn
	mu sync.Mutex
}

func (t *wsTransport) Read(ctx context.Context, msg *cdproto.Message) error {
	_, b, err := t.c.Read(context.Background())
	if err != nil {
		return err
	}
	return jsonv2.Unmarshal(b, msg, DefaultUnmarshalOptions)
}

func (t *wsTransport) Write(ctx context.Context, msg *cdproto.Message) error {
	b, err := jsonv2.Marshal(msg, DefaultMarshalOptions)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.c.Write(context.Background(), websocket.MessageText, b)
}

func (t *wsTransport) Close() error { return t.c.Close(websocket.StatusNormalClosure, "") }
EOF

# TestMain: the allocator above; the browser's version printed direct only.
perl -0pi -e 's/allocCtx, cancel = NewExecAllocator\(context\.Background\(\), allocOpts\.\.\.\)\n\tprintBrowserVersion\(\)/allocCtx, cancel = conformanceAllocator()\n\tif os.Getenv("CONFORMANCE_REMOTE_URL") == "" {\n\t\tprintBrowserVersion()\n\t}/' chromedp_test.go
grep -q 'conformanceAllocator()' chromedp_test.go || { echo "patch of TestMain did not apply (chromedp $version changed it)" >&2; exit 1; }
# The transport of the guard mode: github.com/coder/websocket, at the
# version this repository uses.
ws=$(cd "$repo" && go list -m -f '{{.Version}}' github.com/coder/websocket)
go get "github.com/coder/websocket@$ws"
go test -count=1 -run '^$' . >/dev/null # compiles the patched suite (outside the namespace: downloads allowed)

export GOPROXY=off GOFLAGS=-mod=mod CHROMEDP_TEST_RUNNER="$chrome"
results="$work/results"

# summarize turns go test -json into "Test<TAB>pass|fail|skip" lines.
summarize() {
	jq -r 'select(.Test != null and (.Action == "pass" or .Action == "fail" or .Action == "skip")) | "\(.Test)\t\(.Action)"' "$1" | sort
}

run_direct() {
	echo "direct: go test -run '$run' -skip '$skip'"
	unshare --net -- bash -c 'ip link set lo up; exec go test -count=1 -json -timeout "$0" -run "$1" -skip "$2" .' "$timeout" "$run" "$skip" > "$results/direct.json" 2>"$results/direct.stderr" || true
	summarize "$results/direct.json" > "$results/direct.tsv"
}

run_guard() {
	local skip_mode
	skip_mode=$(skip_for guard)
	echo "guard: cdpguard serve, go test -run '$run' -skip '$skip_mode'"
	if [ -n "${CDPGUARD_BIN:-}" ]; then
		cp "$CDPGUARD_BIN" "$work/cdpguard"
	else
		(cd "$repo" && go build -o "$work/cdpguard" ./cmd/cdpguard)
	fi
	# One namespace for the guard and the suite: the guard's browser can
	# reach only loopback. Every cap on users is lifted (-1): the suite
	# runs many tests at once as one user; the caps are the operator's.
	unshare --net -- bash -c '
		ip link set lo up
		"$0" serve --listen 127.0.0.1:9333 --chrome "$1" --allow 127.0.0.1 --allow-private 127.0.0.0/8 \
			--max-tabs-per-user -1 --max-contexts-per-user -1 --max-connections-per-user -1 \
			--new-users-per-second -1 --log-level info > "$2/guard.log" 2>&1 &
		guard=$!
		for i in $(seq 1 100); do curl -fs http://127.0.0.1:9333/json/version >/dev/null && break; sleep 0.2; done
		CONFORMANCE_REMOTE_URL=http://127.0.0.1:9333 go test -count=1 -json -timeout "$3" -run "$4" -skip "$5" . > "$2/guard.json" 2>"$2/guard.stderr" || true
		kill "$guard"; wait "$guard" || true
	' "$work/cdpguard" "$chrome" "$results" "$timeout" "$run" "$skip_mode"
	summarize "$results/guard.json" > "$results/guard.tsv"
}

# run_remote is the guard mode's allocator against a plain Chromium: it
# tells what attaching over a WebSocket changes (the suite's first tab is
# a new one, not the browser's own; no pipe) from what the guard changes.
# skip_for MODE prints the -skip regexp of MODE.
skip_for() {
	local extra=''
	case "$1" in
	remote) extra="$attached_skip" ;;
	guard) extra="$attached_skip${guard_skip:+|$guard_skip}" ;;
	esac
	if [ -z "$extra" ]; then
		printf '%s' "$skip"
	elif [ -z "$skip" ]; then
		printf '^(%s)$' "$extra"
	else
		printf '%s|^(%s)$' "$skip" "$extra"
	fi
}

run_remote() {
	local skip_mode
	skip_mode=$(skip_for remote)
	echo "remote: plain Chromium over a WebSocket, go test -run '$run' -skip '$skip_mode'"
	unshare --net -- bash -c '
		ip link set lo up
		profile=$(mktemp -d)
		"$0" --headless --no-sandbox --disable-gpu --no-first-run --remote-debugging-port=9444 \
			--user-data-dir="$profile" about:blank > "$1/remote-chromium.log" 2>&1 &
		browser=$!
		for i in $(seq 1 100); do curl -fs http://127.0.0.1:9444/json/version >/dev/null && break; sleep 0.2; done
		CONFORMANCE_REMOTE_URL=http://127.0.0.1:9444 go test -count=1 -json -timeout "$2" -run "$3" -skip "$4" . > "$1/remote.json" 2>"$1/remote.stderr" || true
		kill "$browser"; wait "$browser" || true
		rm -rf "$profile" || true # helpers of the browser may still be writing to it
	' "$chrome" "$results" "$timeout" "$run" "$skip_mode"
	summarize "$results/remote.json" > "$results/remote.tsv"
}

case "$mode" in
direct) run_direct ;;
guard) run_guard ;;
remote) run_remote ;;
both) run_direct; run_guard ;;
all) run_direct; run_remote; run_guard ;;
*) echo "-mode: direct, remote, guard, both (direct and guard) or all" >&2; exit 2 ;;
esac

for m in direct remote guard; do
	[ -s "$results/$m.tsv" ] && printf '%s: %s\n' "$m" "$(cut -f2 "$results/$m.tsv" | sort | uniq -c | tr '\n' ' ')"
done
# diff.tsv: the tests whose outcome through the guard differs from direct
# (test, direct, guard); remote-diff.tsv: from the plain Chromium attached
# the same way (test, remote, guard).
for base in direct remote; do
	if [ -s "$results/$base.tsv" ] && [ -s "$results/guard.tsv" ]; then
		out="$results/diff.tsv"
		[ "$base" = remote ] && out="$results/remote-diff.tsv"
		join -t$'\t' -a1 -a2 -e missing -o 0,1.2,2.2 "$results/$base.tsv" "$results/guard.tsv" | awk -F'\t' '$2 != $3' > "$out"
		echo "differ from $base: $(wc -l < "$out") (in $out)"
	fi
done
