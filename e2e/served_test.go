package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

var listenRE = regexp.MustCompile(`http://127\.0\.0\.1:\d+`)

// serveArgs are the arguments of a `cdpguard serve` for the test hosts.
func serveArgs(chrome string) []string {
	args := []string{"serve", "--listen", "127.0.0.1:0", "--allow", testhosts.AllowedName, "--host-map", "*.test=127.0.0.1", "--chrome", chrome}
	for _, f := range browserFlags() {
		args = append(args, "--chrome-flag="+f)
	}
	return args
}

// served is a server process a test started (`cdpguard serve`, or a
// stand-in in direct mode), with its log and the URL of its `listening on`
// line. It is killed when the test ends.
type served struct {
	cmd    *exec.Cmd
	waited chan struct{} // closed when the process has exited
	out    *tailBuffer
	up     chan struct{} // gets a value on a `cdpguard up` line
	url    chan string
}

// startServed starts cmd with its output on a pipe of our own (so no copy
// goroutine waits on a surviving child) and Pdeathsig.
func startServed(t *testing.T, cmd *exec.Cmd) *served {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	w.Close()
	s := &served{cmd: cmd, waited: make(chan struct{}), out: &tailBuffer{max: 64 << 10},
		up: make(chan struct{}, 1), url: make(chan string, 1)}
	go func() { _ = cmd.Wait(); close(s.waited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-s.waited; r.Close() })
	go func() { // ends when the pipe closes, at the latest in the cleanup
		sc := bufio.NewScanner(r)
		for sent := false; sc.Scan(); {
			line := sc.Text()
			s.out.Write([]byte(line + "\n"))
			if strings.Contains(line, "cdpguard up") {
				select {
				case s.up <- struct{}{}:
				default:
				}
			}
			if m := listenRE.FindString(line); m != "" && !sent && strings.Contains(line, "listening on") {
				s.url <- m
				sent = true
			}
		}
	}()
	return s
}

// listenURL waits (bounded) for the `listening on` line.
func (s *served) listenURL(t *testing.T) string {
	t.Helper()
	select {
	case u := <-s.url:
		return u
	case <-s.waited:
		t.Fatalf("process exited before logging its listen address:\n%s", s.out)
	case <-time.After(45 * time.Second):
		t.Fatalf("no `listening on http://127.0.0.1:PORT` line within 45s:\n%s", s.out)
	}
	return ""
}
