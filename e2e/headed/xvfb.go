// Package headed is e2e test support for cdpguard with a visible browser: an
// Xvfb display owned by the test, a headed guard (cdpguard.Launch with
// Headed) and a headed Chromium to attach to, a "human" who clicks with real
// X input (xdotool) or with Input.dispatchMouseEvent on the test's own
// direct browser connection, the element-to-screen mapping that needs, and
// screenshots saved as test artifacts.
//
// Everything here works inside `unshare --net`: Xvfb listens on its unix
// socket only (-nolisten tcp), and the browser is told the display by flag
// (--display), so the test process's environment is never changed.
package headed

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Screen size of the display and of the browser window on it. The window
// is placed at 0,0 and fills the screen, so screen coordinates are window
// coordinates.
const (
	ScreenWidth  = 1280
	ScreenHeight = 800
)

const (
	// startWait bounds Xvfb's start-up (it writes its display number when
	// it accepts connections).
	startWait = 10 * time.Second
	// stopWait bounds each wait for Xvfb to exit after a signal.
	stopWait = 3 * time.Second
)

// Display is an Xvfb server that one test started and its cleanup stops.
type Display struct {
	// Name is the X display, ":N".
	Name string
	// fbdir holds Xvfb's screen as an XWD file (-fbdir), read by Screenshot.
	fbdir string
}

// NeedTools reports which of the programs this package runs are missing
// (Xvfb, xdotool): nil when all are on PATH. Callers skip or fail with it as
// their strictness says.
func NeedTools() error {
	var missing []string
	for _, p := range []string{"Xvfb", "xdotool"} {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("not on PATH: %s (Debian packages xvfb, xdotool)", strings.Join(missing, ", "))
	}
	return nil
}

// StartXvfb starts Xvfb on a free display (Xvfb picks it: -displayfd), with
// no TCP listener, and stops it when t ends.
func StartXvfb(t testing.TB) *Display {
	t.Helper()
	if err := NeedTools(); err != nil {
		t.Fatalf("headed: %v", err)
	}
	fbdir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("headed: pipe: %v", err)
	}
	defer r.Close()
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-nolisten", "tcp",
		"-screen", "0", fmt.Sprintf("%dx%dx24", ScreenWidth, ScreenHeight),
		"-fbdir", fbdir)
	cmd.ExtraFiles = []*os.File{w}
	out := &tail{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	done, err := startLocked(cmd)
	w.Close()
	if err != nil {
		t.Fatalf("headed: start Xvfb: %v", err)
	}
	t.Cleanup(func() { stop(t, "Xvfb", cmd, done) })

	num := make(chan string, 1)
	go func() { // ends when Xvfb writes its number or the pipe closes
		line, _ := bufio.NewReader(r).ReadString('\n')
		num <- strings.TrimSpace(line)
	}()
	select {
	case n := <-num:
		if _, err := strconv.Atoi(n); err != nil {
			t.Fatalf("headed: Xvfb gave no display number (%q): %s", n, out)
		}
		d := &Display{Name: ":" + n, fbdir: fbdir}
		t.Logf("headed: Xvfb on display %s", d.Name)
		return d
	case <-done:
		t.Fatalf("headed: Xvfb exited at start: %s", out)
	case <-time.After(startWait):
		t.Fatalf("headed: Xvfb gave no display number within %v: %s", startWait, out)
	}
	return nil
}

// ChromeFlags are the flags that put a headed Chromium on d, in a window
// at 0,0 that fills the screen.
func (d *Display) ChromeFlags() []string {
	return []string{
		"--ozone-platform=x11",
		"--display=" + d.Name,
		"--window-position=0,0",
		fmt.Sprintf("--window-size=%d,%d", ScreenWidth, ScreenHeight),
	}
}

// env is the environment for an X client on d.
func (d *Display) env() []string {
	env := []string{"DISPLAY=" + d.Name}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DISPLAY=") {
			env = append(env, kv)
		}
	}
	return env
}

// screenFile is where Xvfb keeps screen 0 (XWD format) under -fbdir.
func (d *Display) screenFile() string { return filepath.Join(d.fbdir, "Xvfb_screen0") }

// startLocked starts cmd from a goroutine that keeps its OS thread locked
// until cmd exits: Pdeathsig fires when the forking *thread* exits, and Go
// retires a thread whose goroutine ends locked to it. It unlocks before it
// ends, so the thread is not retired under children others forked on it
// (internal/browser's Process.run). done is closed when cmd has exited.
func startLocked(cmd *exec.Cmd) (done <-chan struct{}, err error) {
	d := make(chan struct{})
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(d)
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(d)
	}()
	return d, <-started
}

// stop ends cmd's process group: SIGTERM, then SIGKILL, each wait bounded.
func stop(t testing.TB, what string, cmd *exec.Cmd, done <-chan struct{}) {
	if cmd.Process == nil {
		return
	}
	pg := -cmd.Process.Pid
	_ = syscall.Kill(pg, syscall.SIGTERM)
	select {
	case <-done:
		_ = syscall.Kill(pg, syscall.SIGKILL) // helpers left in the group
		return
	case <-time.After(stopWait):
	}
	_ = syscall.Kill(pg, syscall.SIGKILL)
	select {
	case <-done:
	case <-time.After(stopWait):
		t.Errorf("headed: %s pid %d did not exit after SIGKILL", what, cmd.Process.Pid)
	}
}

// tail keeps the last 8 KiB a process wrote, for error messages.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (w *tail) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	if over := len(w.buf) - 8<<10; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(b), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}
