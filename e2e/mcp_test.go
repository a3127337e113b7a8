package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// TestMCP drives the whole agent stack as LibreChat runs it: two
// @playwright/mcp servers with --cdp-endpoint at the guard and --cdp-header
// for two users, each driven by the MCP SDK's client over stdio
// (e2e/js/mcp.mjs). An allowed page's content comes back, a forbidden host
// comes back as the explanation naming the reachable origins (and its
// listener sees nothing), and the two users' tabs and storage stay apart.
func TestMCP(t *testing.T) {
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
	g := userGuard(t, nil)
	runNodeSteps(t, g.URL(), h,
		[]string{"MCP_CLI=" + abs, "USER_A=mcp-alice", "USER_B=mcp-bob", "OUTPUT_DIR=" + t.TempDir()},
		[]string{"startServers", "navigateAllowed", "navigateForbidden", "navigateOtherUser", "tabsIsolated", "storageIsolated", "close"},
		"mcp.mjs")
	if n := h.Forbidden.Total(); n > 0 || h.Forbidden.Conns() > 0 {
		t.Errorf("forbidden host was reached: %d requests, %d connections: %v", n, h.Forbidden.Conns(), h.Forbidden.Log())
	}
}
