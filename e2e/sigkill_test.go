package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// TestSIGKILLTakesBrowserDown runs `cdpguard serve`, finds the Chromium it
// launched, SIGKILLs cdpguard and checks that every browser process is gone
// within 2 s: a browser that outlived its guard would run unguarded
// (interception stops when the intercepting connection closes: README "Security model", Lifetime).
//
// In direct mode the "server" is a shell that starts Chromium in the
// background, which does not die with it: the test must then fail.
func TestSIGKILLTakesBrowserDown(t *testing.T) {
	parallelSuite(t) // own cdpguard process, browser and temporary directory
	chrome := needBrowser(t)
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}

	var cmd *exec.Cmd
	marker := "--remote-debugging-pipe"
	if directMode() {
		marker = "--remote-debugging-port"
		args := append([]string{"-c", `"$0" "$@" & echo "listening on http://127.0.0.1:0" >&2; wait`, chrome},
			browserFlags()...)
		args = append(args, "--headless", "--remote-debugging-port=0", "--user-data-dir="+filepath.Join(dir, "profile"), "about:blank")
		cmd = exec.Command("sh", args...)
	} else {
		cmd = exec.Command(buildCdpguard(t, dir), serveArgs(chrome)...)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp) // its fresh profile goes there
	}
	srv := startServed(t, cmd)
	var found []proc
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-srv.waited
		for _, p := range found { // survivors of a failed run; ours by pid
			if alive(p) {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
	})
	base := srv.listenURL(t)
	out := srv.out
	if directMode() {
		// The browser is up (and past /usr/bin/chromium's wrapper script)
		// once it has written its port file.
		waitFile(t, filepath.Join(dir, "profile", "DevToolsActivePort"), 20*time.Second)
	} else {
		select {
		case <-srv.up:
		case <-time.After(30 * time.Second):
			t.Errorf("no `cdpguard up` line within 30s:\n%s", out)
		}
		cdptest.WaitHTTP(t, base+"/readyz", "ok", 30*time.Second)
	}

	deadline := time.Now().Add(15 * time.Second)
	for {
		var browsers []proc
		for _, p := range descendants(cmd.Process.Pid) {
			if strings.Contains(p.cmd, marker) {
				browsers = append(browsers, p)
			}
		}
		if len(browsers) > 0 {
			// The browser and everything below it (zygotes, renderers,
			// utility processes).
			seen := map[int]bool{}
			for _, b := range browsers {
				for _, p := range append([]proc{b}, descendants(b.pid)...) {
					if !seen[p.pid] {
						seen[p.pid] = true
						found = append(found, p)
					}
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no child process with %s under pid %d within 15s:\n%s", marker, cmd.Process.Pid, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("browser processes before SIGKILL: %d (browser pid %d)", len(found), found[0].pid)

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL: %v", err)
	}
	select {
	case <-srv.waited:
	case <-time.After(5 * time.Second):
		t.Fatal("killed process not reaped within 5s")
	}
	var left []proc
	for end := time.Now().Add(2 * time.Second); ; {
		left = left[:0]
		for _, p := range found {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(end) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, p := range left {
		t.Errorf("browser process %d outlived its guard by 2s: %.200s", p.pid, p.cmd)
	}
	if !directMode() {
		restartSweeps(t, dir, chrome, tmp)
	}
}

// restartSweeps checks that the killed cdpguard's profile was left in tmp
// (nothing could remove it) and that the next cdpguard started with the
// same TMPDIR removes it before its own browser starts; stopped with
// SIGTERM, that one leaves tmp empty.
func restartSweeps(t *testing.T, dir, chrome, tmp string) {
	profiles := func() []string {
		m, err := filepath.Glob(filepath.Join(tmp, "cdpguard-chrome-*"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	stale := profiles()
	if len(stale) != 1 {
		t.Fatalf("profiles in TMPDIR after the SIGKILL: %q, want the killed one's", stale)
	}
	cmd := exec.Command(buildCdpguard(t, dir), serveArgs(chrome)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	srv := startServed(t, cmd)
	cdptest.WaitHTTP(t, srv.listenURL(t)+"/readyz", "ok", 30*time.Second)
	if now := profiles(); len(now) != 1 || now[0] == stale[0] {
		t.Errorf("profiles in TMPDIR once the next cdpguard is ready: %q; the killed one's was %s", now, stale[0])
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.waited:
	case <-time.After(15 * time.Second):
		t.Fatalf("cdpguard did not stop within 15s of SIGTERM:\n%s", srv.out)
	}
	if now := profiles(); len(now) != 0 {
		var left []string // what is left says whether the removal ran
		for _, d := range now {
			es, _ := os.ReadDir(d)
			for _, e := range es {
				left = append(left, e.Name())
			}
		}
		t.Errorf("profiles in TMPDIR after a SIGTERM: %q, holding %q; the guard exited with %v; its output:\n%s", now, left, cmd.ProcessState, srv.out)
	}
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s not written within %v", path, d)
}

// buildCdpguard puts a cdpguard binary built from ./cmd/cdpguard into dir
// and returns its path. The build runs once per test binary (several suites
// run the binary, some in parallel); each caller gets a hard link to it.
func buildCdpguard(t *testing.T, dir string) string {
	t.Helper()
	built, err := cdpguardBuild()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "cdpguard")
	if err := os.Link(built, bin); err != nil {
		return built // another file system: the shared build serves as well
	}
	return bin
}

// e2eBinDir is the test binary's own directory for built programs; TestMain
// removes it.
var e2eBinDir = sync.OnceValues(func() (string, error) { return os.MkdirTemp("", "cdpguard-e2e-bin-") })

// cdpguardBuild is the daemon binary of cdptest.Daemon, built (when
// scripts/test.sh did not) once into e2eBinDir.
var cdpguardBuild = sync.OnceValues(func() (string, error) {
	dir, err := e2eBinDir()
	if err != nil {
		return "", fmt.Errorf("directory for the cdpguard binary: %w", err)
	}
	return cdptest.Daemon(context.Background(), dir)
})
