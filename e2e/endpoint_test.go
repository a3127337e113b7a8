package e2e

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// instructionsMarker is the guard's Instructions text; the explanation page
// must show it.
const instructionsMarker = "e2e-instructions-marker: ask the operator"

// browserFlags are the flags every browser in these tests needs on this
// machine (root, no GPU, no network beyond loopback). The feature list is
// the guard's economy flags again, for the unguarded browsers: the omnibox
// popup's WebUI renderer is CPU a test never uses (CI time, issue #22).
func browserFlags() []string {
	f := []string{"--disable-gpu", "--no-first-run", "--disable-sync",
		"--disable-background-networking", "--disable-component-update",
		"--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup,PreloadTopChromeWebUI"}
	if os.Geteuid() == 0 {
		f = append(f, "--no-sandbox")
	}
	return f
}

// chromium is a browser started by the test with a debugging port.
type chromium struct {
	// URL is http://127.0.0.1:PORT, the browser's own CDP endpoint.
	URL string
	cmd *exec.Cmd
	out *tailBuffer
}

// startChromium starts a plain headless Chromium with --remote-debugging-port=0
// and MAP *.test 127.0.0.1, reads its port from DevToolsActivePort, and kills
// it when t ends.
func startChromium(t *testing.T) *chromium {
	t.Helper()
	path := needBrowser(t)
	dir := t.TempDir()
	args := append(browserFlags(),
		"--headless",
		"--remote-debugging-port=0",
		"--user-data-dir="+dir,
		"--host-resolver-rules=MAP *.test 127.0.0.1, MAP *.test. 127.0.0.1",
		"about:blank",
	)
	out := &tailBuffer{max: 16 << 10}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if os.Getenv("CDPGUARD_E2E_LOG") == "1" {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(out, os.Stderr), io.MultiWriter(out, os.Stderr)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	t.Cleanup(func() {
		// The process group holds the browser and its helpers, all ours.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-waited:
		case <-time.After(5 * time.Second):
			t.Errorf("chromium pid %d did not exit after SIGKILL", cmd.Process.Pid)
		}
	})
	c := &chromium{cmd: cmd, out: out}
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		if line, _, _ := strings.Cut(string(b), "\n"); err == nil && line != "" {
			if port, err := strconv.Atoi(strings.TrimSpace(line)); err == nil && port > 0 {
				c.URL = "http://127.0.0.1:" + strconv.Itoa(port)
				break
			}
		}
		select {
		case <-waited:
			t.Fatalf("chromium exited before writing DevToolsActivePort:\n%s", out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no DevToolsActivePort after 20s:\n%s", out)
		}
	}
	cdptest.WaitHTTP(t, c.URL+"/json/version", "", 10*time.Second)
	return c
}

// guardConfig is the policy every guarded test uses: allowed.test on any
// port, every *.test name mapped to loopback.
func guardConfig(t *testing.T) cdpguard.Config {
	cfg := cdpguard.Config{
		Allow:        []string{testhosts.AllowedName},
		HostMap:      []string{"*.test=127.0.0.1"},
		Instructions: instructionsMarker,
		ChromePath:   needBrowser(t),
		ChromeFlags:  browserFlags(),
	}
	if os.Getenv("CDPGUARD_E2E_LOG") == "1" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return cfg
}

// endpoint returns the CDP endpoint under test: a guard launched with
// guardConfig, or in direct mode a plain Chromium.
func endpoint(t *testing.T) string {
	t.Helper()
	if directMode() {
		return startChromium(t).URL
	}
	return cdptest.StartGuard(t, guardConfig(t)).URL()
}

// tailBuffer keeps the last max bytes written to it; safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if over := w.b.Len() - w.max; over > 0 {
		w.b.Next(over)
	}
	return len(p), nil
}

func (w *tailBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
