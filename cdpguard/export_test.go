package cdpguard

import (
	"os"
	"os/exec"
	"testing"
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
