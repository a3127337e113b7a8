package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// bigPolicy is a policy file near the size limit: the allowed host, n
// filler entries under a name no one resolves, and groups groups that inherit the
// list (before issue 32 each compiled its own copy, and a reload of it
// took seconds).
func bigPolicy(n, groups int, extra ...string) string {
	var b strings.Builder
	b.WriteString("allow: [" + testhosts.AllowedName)
	for _, e := range extra {
		b.WriteString(", " + e)
	}
	for i := range n {
		fmt.Fprintf(&b, ", f%d.x", i)
	}
	b.WriteString("]\n")
	if groups > 0 {
		b.WriteString("groupHeader: X-Cdpguard-Group\ngroups:\n")
		for i := range groups {
			fmt.Fprintf(&b, "  g%d: {instructions: group %d}\n", i, i)
		}
	}
	return b.String()
}

// TestPolicyReloadSignals runs `cdpguard serve --policy-file` as a
// program (issue 32 item 3): a FIFO swapped in for the policy file is
// refused and counted without wedging the watcher, and a regular file
// renamed over it later is in force; then, while SIGHUPs reload a file
// near the size limit (64,000 entries under 2,000 groups), a SIGTERM
// stops the daemon with exit 0 within 10 s: reloads run off the signal
// loop, and the stop does not wait them out.
func TestPolicyReloadSignals(t *testing.T) {
	parallelSuite(t)
	chrome := needBrowser(t)
	if directMode() {
		t.Skip("the policy file is cdpguard's; there is no direct-mode equivalent")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	writePolicyFile(t, path, "allow: ["+testhosts.AllowedName+"]\n")
	cmd := exec.Command(buildCdpguard(t, dir), policyFileServeArgs(t, chrome, path)...)
	srv := startServed(t, cmd)
	base := srv.listenURL(t)
	cdptest.WaitHTTP(t, base+"/readyz", "ok", 45*time.Second)

	errorsBefore := policyErrors(t, base)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fifo, path); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); policyErrors(t, base) < errorsBefore+1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a FIFO at the policy file's path was not refused and counted within 10 s:\n%s", srv.out)
		}
	}
	writePolicyFile(t, path, "allow: ["+testhosts.AllowedName+", after-fifo.test]\n")
	waitPolicy(t, base, "", "", `"after-fifo.test"`, "")

	writePolicyFile(t, path, bigPolicy(64000, 2000, "big.test"))
	for i := 0; i < 3; i++ { // more than the signal loop's channel would hold before
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(srv.out.String(), "SIGHUP: reloading the policy file"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no SIGHUP reload started within 10 s:\n%s", srv.out)
		}
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.waited:
	case <-time.After(10 * time.Second):
		t.Fatalf("cdpguard still running 10 s after a SIGTERM during a reload:\n%s", srv.out)
	}
	t.Logf("exited %v after a SIGTERM during a reload", time.Since(start).Round(time.Millisecond))
	if !cmd.ProcessState.Success() {
		t.Errorf("exit after SIGTERM: %v, want 0:\n%s", cmd.ProcessState, srv.out)
	}
}
