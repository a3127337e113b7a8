package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// rssTargetMB is issue 5's bound on cdpguard's resident memory at 50 users.
const rssTargetMB = 60

var listeningRE = regexp.MustCompile(`listening on (http://[^\s"]+)`)

// guardBinary is a cdpguard serve process started by the bench.
type guardBinary struct {
	cmd    *exec.Cmd
	exited chan struct{}
	out    *tail
	url    string
}

// repoRoot is the module root (where go.mod is), so the bench works from
// any directory inside the repository.
func repoRoot(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if gomod := strings.TrimSpace(string(out)); err == nil && gomod != "" && gomod != os.DevNull {
		return filepath.Dir(gomod)
	}
	return "."
}

// startGuardBinary runs `cdpguard serve` (with extra flags) and waits for
// its listening line.
func startGuardBinary(ctx context.Context, bin, chrome string, extra ...string) (*guardBinary, error) {
	return startGuardBinaryEnv(ctx, nil, bin, chrome, extra...)
}

// startGuardBinaryEnv is startGuardBinary with env added to the process's
// environment (the task bench gives its browser a home of its own).
func startGuardBinaryEnv(ctx context.Context, env []string, bin, chrome string, extra ...string) (*guardBinary, error) {
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0", "--allow", siteHost,
		"--host-map", "*.test=127.0.0.1", "--chrome", chrome}, extra...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("cdpguard stderr: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	b := &guardBinary{cmd: cmd, exited: make(chan struct{}), out: &tail{max: 16 << 10}}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			_, _ = b.out.Write([]byte(line + "\n"))
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		close(b.exited)
	}()
	select {
	case b.url = <-found:
		return b, nil
	case <-b.exited:
		return nil, fmt.Errorf("cdpguard exited before listening: %s", b.out.String())
	case <-time.After(startTimeout):
		b.stop()
		return nil, fmt.Errorf("cdpguard did not print its listening line in %v: %s", startTimeout, b.out.String())
	case <-ctx.Done():
		b.stop()
		return nil, ctx.Err()
	}
}

// stop asks cdpguard to exit (it takes its browser with it), then kills
// its process group if it has not exited in time.
func (b *guardBinary) stop() {
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
		return
	case <-time.After(closeWait):
	}
	_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-b.exited:
	case <-time.After(closeWait):
		fmt.Fprintf(os.Stderr, "bench: cdpguard pid %d did not exit after SIGKILL\n", b.cmd.Process.Pid)
	}
}

// rssMB reads VmRSS of pid from /proc.
func rssMB(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read status of %d: %w", pid, err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseFloat(f[0], 64)
				if err != nil {
					return 0, fmt.Errorf("VmRSS %q: %w", rest, err)
				}
				return kb / 1024, nil
			}
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// daemonBinary returns the cdpguard binary of -guard-bin, or one it builds
// into a temporary directory that done removes.
func daemonBinary(ctx context.Context, o options) (bin string, done func(), err error) {
	if o.guardBin != "" {
		return o.guardBin, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "cdpguard-bench-bin-")
	if err != nil {
		return "", nil, fmt.Errorf("temp dir: %w", err)
	}
	done = func() { _ = os.RemoveAll(dir) }
	fmt.Fprintln(os.Stderr, "bench: go build ./cmd/cdpguard")
	if bin, err = cdptest.BuildDaemon(ctx, dir); err != nil {
		done()
		return "", nil, err
	}
	return bin, done, nil
}

// measureMemory builds and runs the cdpguard binary and reads its RSS with
// 0 and then each count of idle users connected (each user one
// browser-level WebSocket that has answered Browser.getVersion).
func measureMemory(ctx context.Context, opts options, counts []int) ([]memResult, error) {
	bin, done, err := daemonBinary(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer done()
	b, err := startGuardBinary(ctx, bin, opts.chrome)
	if err != nil {
		return nil, err
	}
	defer b.stop()
	ep := &endpoint{name: "cdpguard-binary", httpURL: b.url, perUser: true}
	var sessions []*session
	defer func() {
		for _, s := range sessions {
			s.c.Close()
		}
	}()
	var out []memResult
	for _, n := range append([]int{0}, counts...) {
		for len(sessions) < n {
			s, err := ep.connect(ctx, fmt.Sprintf("bench-idle-%d", len(sessions)))
			if err == nil {
				cctx, cancel := context.WithTimeout(ctx, opTimeout)
				_, err = s.c.Call(cctx, "", "Browser.getVersion", nil)
				cancel()
			}
			if err != nil {
				if s != nil {
					s.c.Close()
				}
				return out, fmt.Errorf("idle user %d: %w", len(sessions), err)
			}
			sessions = append(sessions, s)
		}
		select { // let the guard settle (GC, context creation) before reading
		case <-time.After(opts.memSettle):
		case <-ctx.Done():
			return out, ctx.Err()
		}
		mb, err := rssMB(b.cmd.Process.Pid)
		if err != nil {
			return out, err
		}
		m := memResult{Users: n, RSSMB: mb}
		if n == 50 {
			met := mb < rssTargetMB
			m.TargetMB, m.Met = rssTargetMB, &met
		}
		fmt.Fprintf(os.Stderr, "  memory %3d idle users: VmRSS %.1f MB\n", n, mb)
		out = append(out, m)
	}
	return out, nil
}
