package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/internal/browser"
)

// userHeader keys a user at cdpguard (its default SESSION_HEADER).
const userHeader = "X-LibreChat-User"

// endpoint is a CDP endpoint under test: cdpguard, or Chromium itself.
type endpoint struct {
	name     string // "direct" or "cdpguard"
	httpURL  string // http://127.0.0.1:PORT
	perUser  bool   // users are keyed by header (cdpguard); else contexts are created
	shutdown func()
}

// session is one user's connection and the browser context its pages go in
// ("" lets cdpguard place them in the user's context).
type session struct {
	c         *cdptest.Client
	contextID string
}

// connect opens a browser-level connection for user. On cdpguard the user
// header selects the user's context; on direct Chromium a fresh context is
// created, so both sides load pages in a non-default context.
func (e *endpoint) connect(ctx context.Context, user string) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	h := http.Header{}
	if e.perUser {
		h.Set(userHeader, user)
	}
	ws, err := cdptest.BrowserURL(ctx, e.httpURL, h)
	if err != nil {
		return nil, err
	}
	c, err := cdptest.Dial(ctx, ws, cdptest.Options{Header: h})
	if err != nil {
		return nil, err
	}
	s := &session{c: c}
	if !e.perUser {
		if s.contextID, err = createContext(ctx, c); err != nil {
			c.Close()
			return nil, err
		}
	}
	return s, nil
}

// directFlags match the managed browser's flags where comparable (see
// internal/browser/flags.go) with a debugging port instead of the pipe and
// the test hosts mapped by the resolver instead of the egress proxy.
func directFlags(dir string) []string {
	f := []string{
		"--remote-debugging-port=0", "--user-data-dir=" + dir,
		"--headless", "--disable-gpu",
		"--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-quic", "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
		// The guard's economy flags too (internal/browser): the comparison
		// is of the guard's cost, not of the omnibox popup's renderer.
		"--disable-features=ServiceWorkerAutoPreload," + browser.EconomyFeatures,
		"--host-resolver-rules=MAP *.test 127.0.0.1",
	}
	if os.Geteuid() == 0 {
		f = append(f, "--no-sandbox")
	}
	return append(f, "about:blank")
}

// launchDirect starts the same Chromium binary with a debugging port.
func launchDirect(ctx context.Context, chrome string) (*endpoint, error) {
	dir, err := os.MkdirTemp("", "cdpguard-bench-direct-")
	if err != nil {
		return nil, fmt.Errorf("direct profile: %w", err)
	}
	out := &tail{max: 8 << 10}
	cmd := exec.Command(chrome, directFlags(dir)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", chrome, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-exited:
		case <-time.After(closeWait):
			fmt.Fprintf(os.Stderr, "bench: direct chromium pid %d did not exit after SIGKILL\n", cmd.Process.Pid)
		}
		_ = os.RemoveAll(dir)
	}
	port, err := waitActivePort(ctx, filepath.Join(dir, "DevToolsActivePort"), exited)
	if err != nil {
		stop()
		return nil, fmt.Errorf("direct chromium: %w; output: %s", err, out.String())
	}
	return &endpoint{name: "direct", httpURL: "http://127.0.0.1:" + port, shutdown: stop}, nil
}

// waitActivePort polls Chromium's DevToolsActivePort file for the port.
func waitActivePort(ctx context.Context, path string, exited <-chan struct{}) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		if b, err := os.ReadFile(path); err == nil {
			port, _, _ := strings.Cut(string(b), "\n")
			if _, err := strconv.Atoi(port); err == nil {
				return port, nil
			}
		}
		select {
		case <-exited:
			return "", errors.New("exited before opening its debugging port")
		case <-ctx.Done():
			return "", fmt.Errorf("no DevToolsActivePort: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// launchGuard runs cdpguard in this process with cdpguard.Launch, with
// its in-page controls on or off.
func launchGuard(ctx context.Context, chrome string, log *slog.Logger, controls bool) (*endpoint, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	g, err := cdpguard.Launch(ctx, cdpguard.Config{
		Allow:      []string{siteHost},
		HostMap:    []string{"*.test=127.0.0.1"},
		ChromePath: chrome,
		Logger:     log,
		Controls:   controls,
	})
	if err != nil {
		return nil, fmt.Errorf("cdpguard.Launch: %w", err)
	}
	stop := func() {
		done := make(chan error, 1)
		go func() { done <- g.Close() }()
		select {
		case err := <-done:
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench: cdpguard close: %v\n", err)
			}
		case <-time.After(closeWait):
			fmt.Fprintln(os.Stderr, "bench: cdpguard did not close in time")
		}
	}
	return &endpoint{name: "cdpguard", httpURL: g.URL(), perUser: true, shutdown: stop}, nil
}

// tail keeps the last max bytes written to it.
type tail struct {
	max int
	buf []byte
	mu  sync.Mutex
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
