package deploy

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestHAProxyConfig checks deploy/haproxy/haproxy.cfg: the backend hashes
// the binary's session header on a consistent ring, health-checks
// /readyz, and lets WebSockets idle. When haproxy is installed its own
// parser checks the file too (e2e/haproxy_test.go runs it for real).
func TestHAProxyConfig(t *testing.T) {
	flags := binaryFlags(t)
	data, err := os.ReadFile("haproxy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range strings.Lines(string(data)) {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
	}
	has := func(prefix string) bool {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return true
			}
		}
		return false
	}
	header := flags["session-header"].def
	for _, want := range []string{
		"balance hdr(" + header + ")",
		"hash-type consistent",
		"option httpchk",
		"http-check send meth GET uri /readyz",
		"http-check expect status 200",
		"timeout tunnel",
		"default-server check",
	} {
		if !has(want) {
			t.Errorf("haproxy.cfg has no line starting %q", want)
		}
	}
	servers := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "server ") {
			servers++
		}
	}
	if servers < 2 {
		t.Errorf("%d servers: the example should show several instances", servers)
	}
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Logf("haproxy not installed; skipping `haproxy -c` (%v)", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-c", "-f", "haproxy/haproxy.cfg")
	// The file's default server names resolve only where they exist.
	cmd.Env = append(os.Environ(), "CDPGUARD_1=127.0.0.1:1", "CDPGUARD_2=127.0.0.1:2", "CDPGUARD_3=127.0.0.1:3")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("haproxy -c: %v\n%s", err, out)
	}
}
