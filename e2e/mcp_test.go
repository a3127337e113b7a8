package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// TestMCP drives the whole agent stack as LibreChat runs it: two
// @playwright/mcp servers with --cdp-endpoint at the guard and --cdp-header
// for two users, each driven by the MCP SDK's client over stdio
// (e2e/clients/mcp.mjs). An allowed page's content comes back, a forbidden host
// comes back as the explanation naming the reachable origins (and its
// listener sees nothing), and the two users' tabs and storage stay apart.
func TestMCP(t *testing.T) {
	parallelSuite(t) // own guard, browser and test hosts: overlaps the other suites' waits (CI wall time)
	needBrowser(t)
	needNode(t)
	cli := filepath.Join("node_modules", "@playwright", "mcp", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		if strict() {
			t.Fatalf("CDPGUARD_E2E=1: %s missing: run `npm ci --ignore-scripts` in e2e/: %v", cli, err)
		}
		t.Skipf("skipping: %s missing (run `npm ci --ignore-scripts` in e2e/)", cli)
	}
	abs, err := filepath.Abs(cli)
	if err != nil {
		t.Fatal(err)
	}
	h := testhosts.Start(t)
	var rec *methodRecorder
	g := userGuard(t, func(c *cdpguard.Config) {
		rec = newMethodRecorder(c.Logger)
		c.Logger = rec.logger()
	})
	runNodeSteps(t, g.URL(), h,
		[]string{"MCP_CLI=" + abs, "USER_A=mcp-alice", "USER_B=mcp-bob", "OUTPUT_DIR=" + t.TempDir()},
		[]string{"startServers", "navigateAllowed", "navigateForbidden", "navigateOtherUser", "tabsIsolated", "storageIsolated", "close"},
		"mcp.mjs")
	rec.check(t, "@playwright/mcp")
	// Google's chrome-devtools-mcp (puppeteer inside), as another user.
	dcli, err := filepath.Abs(filepath.Join("node_modules", "chrome-devtools-mcp", "build", "src", "bin", "chrome-devtools-mcp.js"))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("chrome-devtools-mcp", func(t *testing.T) {
		runNodeSteps(t, g.URL(), h,
			[]string{"DEVTOOLS_MCP_CLI=" + dcli, "USER_A=devtools-alice", "OUTPUT_DIR=" + t.TempDir()},
			[]string{"startServer", "newPage", "evaluate", "resize", "navigateForbidden", "listPages", "close"},
			"devtoolsmcp.mjs")
		rec.check(t, "chrome-devtools-mcp")
	})
	if n := h.Forbidden.Total(); n > 0 || h.Forbidden.Conns() > 0 {
		t.Errorf("forbidden host was reached: %d requests, %d connections: %v", n, h.Forbidden.Conns(), h.Forbidden.Log())
	}
}
