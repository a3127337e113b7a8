package cdptest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/cdpguard"
)

// StartGuard launches a guard with cfg, waits until /readyz says ok, and
// closes it when t ends, checking that it stops in time. It is the one way
// the e2e tests start a guard.
func StartGuard(t testing.TB, cfg cdpguard.Config) *cdpguard.Guard {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := cdpguard.Launch(ctx, cfg)
	if err != nil {
		t.Fatalf("cdpguard.Launch: %v", err)
	}
	CloseOnCleanup(t, g)
	WaitHTTP(t, g.URL()+"/readyz", "ok", 30*time.Second)
	return g
}

// CloseOnCleanup closes g when t ends and checks that it stops in time.
func CloseOnCleanup(t testing.TB, g *cdpguard.Guard) {
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("guard close: %v", err)
		}
		select {
		case <-g.Done():
		case <-time.After(10 * time.Second):
			t.Errorf("guard not done 10s after Close")
		}
	})
}

// WaitHTTP polls url until it answers 200 (and, if want is not empty, a body
// equal to want after trimming space) or d passes.
func WaitHTTP(t testing.TB, url, want string, d time.Duration) {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(d)
	var last string
	for time.Now().Before(deadline) {
		resp, err := c.Get(url)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			last = resp.Status + " " + strings.TrimSpace(string(b))
			if resp.StatusCode == http.StatusOK && (want == "" || strings.TrimSpace(string(b)) == want) {
				return
			}
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s not ready after %v; last answer: %s", url, d, last)
}
