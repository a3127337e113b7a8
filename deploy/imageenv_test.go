package deploy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var listeningRE = regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)

// imageUID is the image's USER; the test runs cdpguard as it when it runs
// as root (CI).
const imageUID = 10001

// TestImageEnvironmentServes is the closest this sandbox (no container
// engine) gets to running the image: the cdpguard binary with exactly the
// Dockerfile's ENV (only the listen address moved to a free loopback port)
// and CMD, as the image's non-root uid, must start Debian's Chromium with
// its sandbox on (no --no-sandbox; its renderers in their own user
// namespace), answer the HEALTHCHECK's /readyz with ok, and exit on
// SIGTERM within 10 s.
func TestImageEnvironmentServes(t *testing.T) {
	src, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	ins := parseDockerfile(string(src))
	env := map[string]string{}
	var cmdArgs []string
	for _, in := range ins {
		switch in.cmd {
		case "FROM":
			env = map[string]string{} // only the final stage's
		case "ENV":
			for k, v := range envPairs(t, in.args) {
				env[k] = v
			}
		case "CMD":
			if err := json.Unmarshal([]byte(in.args), &cmdArgs); err != nil {
				t.Fatalf("CMD %q: want the exec form: %v", in.args, err)
			}
		}
	}
	if _, err := os.Stat(env["CHROME_PATH"]); err != nil {
		if os.Getenv("CDPGUARD_E2E") == "1" {
			t.Fatalf("CDPGUARD_E2E=1: the image's CHROME_PATH: %v", err)
		}
		t.Skipf("skipping: the image's CHROME_PATH: %v (set CDPGUARD_E2E=1 to fail instead)", err)
	}

	bin, err := cdpguardBinary()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its parent is private to this user, and the image's
	// uid must write its home.
	dir, err := os.MkdirTemp("", "cdpguard-image-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, home} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}

	cmd := exec.Command(bin, cmdArgs...)
	cmd.Dir = home
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + home}
	for k, v := range env {
		if k == "CDPGUARD_LISTEN" {
			v = "127.0.0.1:0"
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: imageUID, Gid: imageUID}
	} else {
		t.Logf("not root: running as uid %d (also non-root)", os.Geteuid())
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	found := make(chan string, 1)
	var log strings.Builder
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if log.Len() < 64<<10 {
				log.WriteString(sc.Text() + "\n")
			}
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() { <-logDone; _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})

	var base string
	select {
	case base = <-found:
	case <-exited:
		t.Fatalf("cdpguard exited before listening:\n%s", log.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("no listening line within 60s:\n%s", log.String())
	}
	waitReady(t, base+"/readyz")

	// The sandbox: no --no-sandbox anywhere, and a renderer or zygote in a
	// user namespace of its own.
	self := nsUser(cmd.Process.Pid)
	sandboxed := 0
	for _, pid := range childrenOf(cmd.Process.Pid) {
		line, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(line), "--no-sandbox") {
			t.Errorf("Chromium process %d runs with --no-sandbox: %q", pid, strings.ReplaceAll(string(line), "\x00", " "))
		}
		if ns := nsUser(pid); ns != "" && ns != self {
			sandboxed++
		}
	}
	if sandboxed == 0 {
		t.Errorf("no Chromium process in a user namespace of its own: the sandbox is not on")
	}
	t.Logf("Chromium processes in their own user namespace: %d", sandboxed)

	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		t.Logf("exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Errorf("cdpguard did not exit within 10s of SIGTERM:\n%s", log.String())
	}
}

// waitReady polls url until it answers 200 "ok".
func waitReady(t *testing.T, url string) {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	var last string
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		resp, err := c.Get(url)
		if err != nil {
			last = err.Error()
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		_ = resp.Body.Close()
		last = resp.Status + " " + string(b)
		if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(b)) == "ok" {
			return
		}
	}
	t.Fatalf("%s not ok within 30s; last: %s", url, last)
}

// nsUser is the user namespace of pid ("" when unreadable).
func nsUser(pid int) string {
	s, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/user", pid))
	return s
}

// childrenOf lists every process below root, from /proc.
func childrenOf(root int) []int {
	parent := map[int]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		pid, err1 := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if i < 0 || len(f) < 2 || err1 != nil {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			parent[pid] = ppid
		}
	}
	var out []int
	for pid := range parent {
		for p, hops := parent[pid], 0; p != 0 && hops < 64; p, hops = parent[p], hops+1 {
			if p == root {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}
