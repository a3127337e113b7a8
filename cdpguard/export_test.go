package cdpguard

import (
	"os"
	"os/exec"
	"testing"

	"github.com/cdpguard/cdpguard/internal/readpage"
	"github.com/cdpguard/cdpguard/internal/scopes"
)

// needBrowser skips without Chromium, unless CDPGUARD_E2E=1 makes that a
// failure (CI must never skip silently).
func needBrowser(t testing.TB) {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if _, err := exec.LookPath(name); err == nil {
			return
		}
	}
	if os.Getenv("CDPGUARD_E2E") == "1" {
		t.Fatal("no chromium on PATH and CDPGUARD_E2E=1")
	}
	t.Skip("no chromium on PATH; browser tests skipped (set CDPGUARD_E2E=1 to make this a failure)")
}

// NeedBrowser is needBrowser for the external test package.
var NeedBrowser = needBrowser

// readRefusal is what Read and Guard.read refuse url with for the user of
// key in the session sc (nil: no grants): readpage.Refusal under the
// guard's policy in force and its own addresses.
func (g *Guard) readRefusal(key string, sc *scopes.Scope, url string) string {
	return readpage.Refusal(g.policyOf(key), sc.Grants(), url, g.refuseSelf)
}
