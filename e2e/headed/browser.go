package headed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// chromeStartWait bounds a headed Chromium's start-up (its DevToolsActivePort
// file) and the guard's launch: a hang guard. Quiet, the file comes within
// 2 s; beside a whole e2e run at load 20, TestControlsHeaded/attach waited
// out 30 s (2026-12-07).
const chromeStartWait = 90 * time.Second

// LaunchGuard is `cdpguard serve --headed` on d: cfg with Headed set and
// d's flags added, started with cdptest.StartGuard (closed when t ends).
func LaunchGuard(t testing.TB, d *Display, cfg cdpguard.Config) *cdpguard.Guard {
	t.Helper()
	cfg.Headed = true
	cfg.ChromeFlags = append(append([]string(nil), cfg.ChromeFlags...), d.ChromeFlags()...)
	return cdptest.StartGuard(t, cfg)
}

// Chromium is a headed browser the test started itself with a debugging
// port, as a developer would before `cdpguard attach`, and the test's own
// direct connection to it.
type Chromium struct {
	// URL is http://127.0.0.1:PORT, the browser's own CDP endpoint (what
	// cdpguard.Attach is given).
	URL string
	// Direct is the test's browser-level connection to the browser itself,
	// not through any guard: the human's side (Input.* from here is not an
	// agent's).
	Direct *cdptest.Client
}

// StartChromium starts the Chromium at path headed on d with
// --remote-debugging-port=0, a fresh profile and flags, dials it, and kills
// its process group when t ends.
func StartChromium(t testing.TB, d *Display, path string, flags ...string) *Chromium {
	t.Helper()
	dir := t.TempDir()
	args := append(append([]string{
		"--remote-debugging-port=0",
		"--user-data-dir=" + dir,
		"--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
	}, d.ChromeFlags()...), flags...)
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox")
	}
	args = append(args, "about:blank")
	out := &tail{}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	done, err := startLocked(cmd)
	if err != nil {
		t.Fatalf("headed: start chromium: %v", err)
	}
	t.Cleanup(func() { stop(t, "chromium", cmd, done) })

	c := &Chromium{}
	deadline := time.After(chromeStartWait)
	for c.URL == "" {
		b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		line, _, _ := strings.Cut(string(b), "\n")
		if port, perr := strconv.Atoi(strings.TrimSpace(line)); err == nil && perr == nil && port > 0 {
			c.URL = "http://127.0.0.1:" + strconv.Itoa(port)
			break
		}
		select {
		case <-done:
			t.Fatalf("headed: chromium exited before writing DevToolsActivePort: %s", out)
		case <-deadline:
			t.Fatalf("headed: no DevToolsActivePort after %v: %s", chromeStartWait, out)
		case <-time.After(50 * time.Millisecond):
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, err := cdptest.BrowserURL(ctx, c.URL, nil)
	if err != nil {
		t.Fatalf("headed: %v", err)
	}
	if c.Direct, err = cdptest.Dial(ctx, ws, cdptest.Options{}); err != nil {
		t.Fatalf("headed: direct connection: %v", err)
	}
	t.Cleanup(c.Direct.Close)
	return c
}

// AttachPage attaches c (any browser-level connection: the test's direct one
// or an agent's) to targetID with a flat session and returns the session id.
func AttachPage(ctx context.Context, c *cdptest.Client, targetID string) (string, error) {
	v, err := c.Call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": targetID, "flatten": true})
	if err != nil {
		return "", err
	}
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := unmarshal(v, &r); err != nil || r.SessionID == "" {
		return "", fmt.Errorf("Target.attachToTarget: no sessionId in %s (%v)", v, err)
	}
	return r.SessionID, nil
}
