package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// needChromium skips without a browser, except under CDPGUARD_E2E=1.
func needChromium(t *testing.T) {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if _, err := exec.LookPath(name); err == nil {
			return
		}
	}
	if os.Getenv("CDPGUARD_E2E") == "1" {
		t.Fatal("CDPGUARD_E2E=1 but no chromium on PATH")
	}
	t.Skip("skipping: no chromium on PATH (set CDPGUARD_E2E=1 to fail instead)")
}

// TestReadCommand runs `cdpguard read` against a local page: it prints the
// text with the title and URL on top; a URL outside the allowlist is
// refused, naming the host and the reachable origins, and never fetched.
func TestReadCommand(t *testing.T) {
	needChromium(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Command page</title><nav>NAVMARKER</nav><article><h1>Heading</h1>`+
			strings.Repeat(`<p>The one-shot reader prints the main text of the page it was given and exits.</p>`, 5)+`</article>`)
	}))
	defer srv.Close()

	app := newApp()
	var out bytes.Buffer
	app.Writer = &out
	if err := app.Run([]string{"cdpguard", "read", "--allow", "127.0.0.1", srv.URL + "/page"}); err != nil {
		t.Fatalf("read: %v", err)
	}
	for _, want := range []string{"Title: Command page\n", "URL: " + srv.URL + "/page\n", "# Heading", "prints the main text"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "NAVMARKER") {
		t.Errorf("output holds the navigation:\n%s", out.String())
	}

	before := hits.Load()
	app = newApp()
	app.Writer = &bytes.Buffer{}
	err := app.Run([]string{"cdpguard", "read", "--allow", "allowed.test", srv.URL + "/forbidden"})
	if err == nil || !strings.Contains(err.Error(), `"127.0.0.1"`) || !strings.Contains(err.Error(), "Reachable origins: allowed.test") {
		t.Errorf("read of a forbidden URL: %v, want a refusal naming the host and the reachable origins", err)
	}
	if n := hits.Load() - before; n != 0 {
		t.Errorf("the forbidden host was reached %d times", n)
	}
}
