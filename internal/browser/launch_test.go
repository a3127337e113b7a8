//go:build linux

package browser

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLaunch checks one launched browser three ways, one after another:
// its start-up version, big messages on its pipe, and that Close ends its
// whole process group. They share the browser because none of them needs
// a fresh one (Close is last), and a launch is about 2 CPU-seconds under
// -race on the CI machine (issue 37).
func TestLaunch(t *testing.T) {
	var stderr strings.Builder
	p := launch(t, LaunchOptions{Stderr: &syncWriter{w: &stderr}})
	t.Run("GetVersion", func(t *testing.T) { checkGetVersion(t, p) })
	t.Run("BigMessages", func(t *testing.T) { checkBigMessages(t, p.Conn()) })
	t.Run("CloseKillsProcessGroup", func(t *testing.T) { checkCloseKillsProcessGroup(t, p) })
}

// checkGetVersion: the version read at start-up is the browser's.
func checkGetVersion(t *testing.T, p *Process) {
	if v := p.Version(); v == nil || !strings.Contains(v.Browser, "/") || v.ProtocolVersion == "" {
		t.Fatalf("start-up version = %+v", p.Version())
	}
	var got struct {
		Product         string `json:"product"`
		ProtocolVersion string `json:"protocolVersion"`
	}
	call(t, p.Conn(), 1, "", "Browser.getVersion", nil, &got)
	if got.Product != p.Version().Browser {
		t.Errorf("product %q, start-up said %q", got.Product, p.Version().Browser)
	}
	t.Logf("browser %s, protocol %s, pid %d", got.Product, got.ProtocolVersion, p.Pid())
}

// checkCloseKillsProcessGroup: Close leaves no process of the browser, its
// temporary profile is gone and the connection is closed.
func checkCloseKillsProcessGroup(t *testing.T, p *Process) {
	openPage(t, p.Conn()) // a renderer joins the tree
	dir := userDataDirOf(t, p)
	before := treeOf(p.Pid(), dir)
	if len(before) < 2 {
		t.Fatalf("expected chrome and its children, got %q", before)
	}
	if lock, err := os.Open(dir + "/" + profileLock); err != nil {
		t.Errorf("the fresh profile has no lock file: %v", err)
	} else {
		if tryLock(lock) {
			t.Error("a live browser's profile lock could be taken: a sweep would remove its profile")
		}
		_ = lock.Close()
	}
	start := time.Now()
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	t.Logf("Close took %v for %d processes", time.Since(start), len(before))
	if left := treeOf(p.Pid(), dir); len(left) > 0 {
		t.Errorf("alive after Close: %q", left)
	}
	select {
	case <-p.Done():
	default:
		t.Error("Done not closed after Close")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp user-data-dir %s not removed: %v", dir, err)
	}
	if _, err := p.Conn().ReadMessage(); err == nil {
		t.Error("ReadMessage after Close succeeded")
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestLaunchKeepsGivenUserDataDir(t *testing.T) {
	dir := t.TempDir()
	p := launch(t, LaunchOptions{UserDataDir: dir})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("given user-data-dir removed: %v", err)
	}
}

func TestLaunchDoneWhenBrowserExits(t *testing.T) {
	p := launch(t, LaunchOptions{})
	call(t, p.Conn(), 1, "", "Browser.close", nil, nil)
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("Done not closed 30s after Browser.close")
	}
	if _, err := p.Conn().ReadMessage(); err == nil {
		t.Error("ReadMessage after browser exit succeeded")
	}
}

func TestLaunchErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := Launch(ctx, LaunchOptions{Path: "/nonexistent/chrome"}); !errors.Is(err, ErrBrowserNotFound) {
		t.Errorf("missing binary: got %v, want ErrBrowserNotFound", err)
	}
	if _, err := Launch(ctx, LaunchOptions{Path: "/bin/true", Flags: []string{"--remote-debugging-port=1"}}); !errors.Is(err, ErrForbiddenFlag) {
		t.Errorf("forbidden flag: got %v, want ErrForbiddenFlag", err)
	}
	// A binary that exits at once: start-up fails with its output quoted.
	script := t.TempDir() + "/fake-chrome"
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho fake chrome broke >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Launch(ctx, LaunchOptions{Path: script})
	if !errors.Is(err, ErrStartup) || !strings.Contains(err.Error(), "fake chrome broke") {
		t.Errorf("exiting binary: got %v, want ErrStartup quoting its output", err)
	}
	// A binary that never answers: ctx bounds start-up and nothing is left.
	script = t.TempDir() + "/silent-chrome"
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := Launch(ctx, LaunchOptions{Path: script}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("silent binary: got %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Launch took %v after its ctx expired", d)
	}
}

// TestChromeDiesWithParent SIGKILLs a process that launched Chrome and checks
// that Chrome's whole tree goes. The wait is a hang bound, not a speed
// target: without Pdeathsig Chrome outlives its parent for good, while its
// children take their time to see the browser gone (a loaded CI run saw
// the GPU and network processes alive 2 s after it). In "pipe closed" Chrome sees
// its pipe close as well; in "pipe held open" another process keeps the pipe
// open, so only Pdeathsig can end Chrome (this case fails without it).
func TestChromeDiesWithParent(t *testing.T) {
	chromeOrSkip(t)
	for _, hold := range []bool{false, true} {
		name := map[bool]string{false: "pipe closed", true: "pipe held open"}[hold]
		t.Run(name, func(t *testing.T) { testChromeDiesWithParent(t, hold) })
	}
}

// treeGoneBound bounds the wait for Chrome's tree to go after its parent
// was killed: a hang guard (a quiet machine: well under 1 s).
const treeGoneBound = 30 * time.Second

func testChromeDiesWithParent(t *testing.T, hold bool) {
	dir := t.TempDir()
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperLaunchAndWait$", "-test.v")
	helper.Env = append(os.Environ(), "CDPGUARD_BROWSER_HELPER="+dir)
	if hold {
		helper.Env = append(helper.Env, "CDPGUARD_BROWSER_HELPER_HOLD=1")
	}
	helper.Stderr = os.Stderr
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })
	type ready struct{ chrome, holder int }
	readyc := make(chan ready, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var r ready
			if _, err := fmt.Sscanf(sc.Text(), "chrome-ready %d %d", &r.chrome, &r.holder); err == nil {
				readyc <- r
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	var r ready
	select {
	case r = <-readyc:
	case <-time.After(launchTimeout + 30*time.Second):
		t.Fatal("helper did not report a running chrome")
	}
	t.Cleanup(func() {
		if r.holder > 0 {
			_ = syscall.Kill(r.holder, syscall.SIGKILL)
		}
		_ = syscall.Kill(-r.chrome, syscall.SIGKILL) // only matters on failure
		waitTreeGone(r.chrome, dir, 5*time.Second)
	})
	before := treeOf(r.chrome, dir)
	if len(before) < 2 {
		t.Fatalf("expected chrome and its children, got %q", before)
	}
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	start := time.Now()
	if left := waitTreeGone(r.chrome, dir, treeGoneBound); len(left) > 0 {
		t.Fatalf("%d of %d chrome processes alive %v after their parent was SIGKILLed: %q", len(left), len(before), treeGoneBound, left)
	}
	t.Logf("%d chrome processes gone %v after the parent died", len(before), time.Since(start))
}

// TestHelperLaunchAndWait is the helper process of TestChromeDiesWithParent;
// it does nothing in a normal run. It prints "chrome-ready PID HOLDER" where
// HOLDER is the pid of a process holding Chrome's pipe open (or 0).
func TestHelperLaunchAndWait(t *testing.T) {
	dir := os.Getenv("CDPGUARD_BROWSER_HELPER")
	if dir == "" {
		t.Skip("helper process only")
	}
	p := launch(t, LaunchOptions{UserDataDir: dir})
	openPage(t, p.Conn())
	holder := 0
	if os.Getenv("CDPGUARD_BROWSER_HELPER_HOLD") == "1" {
		sleep := exec.Command("sleep", "120")
		sleep.ExtraFiles = []*os.File{p.pipe.r, p.pipe.w}
		if err := sleep.Start(); err != nil {
			t.Fatal(err)
		}
		holder = sleep.Process.Pid
	}
	fmt.Printf("chrome-ready %d %d\n", p.Pid(), holder)
	select {
	case <-p.Done():
	case <-time.After(2 * time.Minute): // the parent kills us long before
	}
}

func userDataDirOf(t *testing.T, p *Process) string {
	t.Helper()
	for _, a := range p.cmd.Args {
		if dir, ok := strings.CutPrefix(a, "--user-data-dir="); ok {
			return dir
		}
	}
	t.Fatal("no --user-data-dir in argv")
	return ""
}

// TestRunKeepsItsThread runs Process.run on a thread where another child
// with Pdeathsig was forked first (as a test's own browser may be, on a
// thread Go later hands to run), and checks that the child outlives run:
// run must not end locked to its thread, which would retire the thread and
// SIGKILL that child.
func TestRunKeepsItsThread(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux's")
	}
	sleeper := exec.Command("sleep", "30")
	sleeper.SysProcAttr = sysProcAttr()
	exited := make(chan struct{})
	ranRun := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // the sleeper and run share this thread
		defer runtime.UnlockOSThread()
		if err := sleeper.Start(); err != nil {
			ranRun <- err
			return
		}
		go func() { _ = sleeper.Wait(); close(exited) }()
		p := &Process{cmd: exec.Command("true"), done: make(chan struct{})}
		started := make(chan error, 1)
		p.run(started)
		ranRun <- <-started
	}()
	if err := <-ranRun; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); <-exited })
	select {
	case <-exited:
		t.Fatalf("a child forked on run's thread died when run ended: %v", sleeper.ProcessState)
	case <-time.After(500 * time.Millisecond): // a retired thread's Pdeathsig lands at once
	}
}
