package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// pwSchema is the part of a tool's input schema the conformance check
// compares: property names, and (for /mcp) each property's type.
type pwSchema struct {
	Type       any                  `json:"type"`
	Properties map[string]*pwSchema `json:"properties"`
	Items      *pwSchema            `json:"items"`
}

// pwTools is @playwright/mcp's own tools/list (e2e/clients/pwtools.mjs).
type pwTools struct {
	Version string `json:"version"`
	Tools   []struct {
		Name        string   `json:"name"`
		InputSchema pwSchema `json:"inputSchema"`
	} `json:"tools"`
}

// notServed are @playwright/mcp's default tools /mcp leaves out on
// purpose: browser_run_code_unsafe runs code in the MCP server's process.
var notServed = []string{"browser_run_code_unsafe"}

// uploadTools are listed only with --upload-dir.
var uploadTools = []string{"browser_file_upload", "browser_drop"}

// propNames lists a schema's property names, with an array's item
// properties as "name[].sub".
func propNames(s *pwSchema, prefix string) []string {
	var out []string
	for name, p := range s.Properties {
		out = append(out, prefix+name)
		if p != nil && p.Items != nil && len(p.Items.Properties) > 0 {
			out = append(out, propNames(p.Items, prefix+name+"[].")...)
		}
	}
	return out
}

// singleTyped reports the properties of s (recursively) whose "type" is
// not one JSON type.
func singleTyped(s *pwSchema, prefix string) []string {
	var bad []string
	for name, p := range s.Properties {
		if p == nil {
			continue
		}
		if _, ok := p.Type.(string); !ok {
			bad = append(bad, prefix+name)
		}
		if p.Items != nil {
			bad = append(bad, singleTyped(&pwSchema{Properties: map[string]*pwSchema{"[]": p.Items}}, prefix+name)...)
			if len(p.Items.Properties) > 0 {
				bad = append(bad, singleTyped(p.Items, prefix+name+"[].")...)
			}
		}
	}
	return bad
}

// TestMCPTools checks /mcp against @playwright/mcp's default tool set and
// drives the tools and arguments taken from it on a real page with
// LibreChat's MCP client (e2e/clients/mcptools.mjs), on a guard with an
// upload directory.
func TestMCPTools(t *testing.T) {
	parallelSuite(t) // own browser and test hosts
	chrome := needBrowser(t)
	node := needNode(t)
	if directMode() {
		t.Skip("the MCP server is cdpguard's own")
	}
	h := testhosts.Start(t)
	up := t.TempDir()
	file := filepath.Join(up, "upload-me.txt")
	if err := os.WriteFile(file, []byte("upload me"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServed(t, exec.Command(buildCdpguard(t, t.TempDir()), append(serveArgs(chrome), "--allow", h.Sink.Origin(), "--upload-dir", up)...))
	base := srv.listenURL(t)

	t.Run("conformance", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "clients/pwtools.mjs")
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("@playwright/mcp tools/list: %v\n%s", err, out)
		}
		var ref pwTools
		if err := json.Unmarshal(out, &ref); err != nil {
			t.Fatalf("@playwright/mcp tools/list: %v\n%s", err, out)
		}
		if len(ref.Tools) < 20 {
			t.Fatalf("@playwright/mcp %s lists %d tools: %s", ref.Version, len(ref.Tools), out)
		}
		s := mcpConnect(t, base, "conformance")
		lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer lcancel()
		list, err := s.ListTools(lctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		ours := map[string]*pwSchema{}
		for _, tl := range list.Tools {
			b, err := json.Marshal(tl.InputSchema)
			if err != nil {
				t.Fatal(err)
			}
			var sc pwSchema
			if err := json.Unmarshal(b, &sc); err != nil {
				t.Fatal(err)
			}
			ours[tl.Name] = &sc
			if bad := singleTyped(&sc, ""); len(bad) > 0 {
				t.Errorf("%s: properties without one JSON type: %v", tl.Name, bad)
			}
		}
		for _, tl := range ref.Tools {
			mine, ok := ours[tl.Name]
			switch {
			case slices.Contains(notServed, tl.Name):
				if ok {
					t.Errorf("/mcp lists %s, which it must refuse", tl.Name)
				}
				continue
			case !ok:
				t.Errorf("/mcp lacks @playwright/mcp %s's tool %s", ref.Version, tl.Name)
				continue
			}
			have := propNames(mine, "")
			for _, p := range propNames(&tl.InputSchema, "") {
				if !slices.Contains(have, p) {
					t.Errorf("/mcp's %s lacks @playwright/mcp %s's argument %s (has %s)", tl.Name, ref.Version, p, strings.Join(have, ", "))
				}
			}
		}
		for _, name := range uploadTools {
			if ours[name] == nil {
				t.Errorf("/mcp with --upload-dir lacks %s", name)
			}
		}
		for _, name := range []string{"browser_read"} {
			if ours[name] == nil {
				t.Errorf("/mcp lacks its own %s", name)
			}
		}
		t.Logf("@playwright/mcp %s: %d tools; /mcp: %d tools", ref.Version, len(ref.Tools), len(ours))
	})

	t.Run("node", func(t *testing.T) {
		before := h.Forbidden.Total() + h.Forbidden.Conns()
		runNodeSteps(t, base, h, []string{"MCP_PAGES=" + h.PageURL("/mcp/"), "UPLOAD_FILE=" + file},
			[]string{"connect", "find", "networkRequests", "networkBlocked", "emulateMedia", "consoleLevels", "evaluateTarget", "screenshotElement", "snapshotPart", "clickModifiers", "typeSlowly", "fillSlider", "tabsContext", "upload", "drop", "sinceNavigation"},
			"mcptools.mjs")
		if n := h.Forbidden.Total() + h.Forbidden.Conns(); n != before {
			t.Errorf("the forbidden listener saw %d hits/conns: %v", n-before, h.Forbidden.Log())
		}
	})
}
