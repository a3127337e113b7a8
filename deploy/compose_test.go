package deploy

import (
	"os"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// composeFile is the part of the Compose specification deploy/compose.yaml
// uses; strict decoding refuses anything else, so a misspelt key fails.
type composeFile struct {
	Name     string                    `json:"name"`
	Services map[string]composeService `json:"services"`
	Networks map[string]*struct {
		Internal bool `json:"internal"`
	} `json:"networks"`
}

type composeService struct {
	Build *struct {
		Context    string `json:"context"`
		Dockerfile string `json:"dockerfile"`
	} `json:"build"`
	Image           string            `json:"image"`
	Init            bool              `json:"init"`
	Command         any               `json:"command"`
	Environment     map[string]string `json:"environment"`
	SecurityOpt     []string          `json:"security_opt"`
	CapDrop         []string          `json:"cap_drop"`
	ShmSize         string            `json:"shm_size"`
	StopGracePeriod string            `json:"stop_grace_period"`
	Networks        []string          `json:"networks"`
	Ports           []string          `json:"ports"`
	Volumes         []string          `json:"volumes"`
	DependsOn       map[string]struct {
		Condition string `json:"condition"`
	} `json:"depends_on"`
}

// TestCompose checks deploy/compose.yaml: cdpguard publishes no port, sits
// on an internal network with LibreChat, waits healthy before LibreChat
// starts, and sets only environment names the binary reads.
func TestCompose(t *testing.T) {
	flags := binaryFlags(t)
	data, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	g, ok := f.Services["cdpguard"]
	if !ok {
		t.Fatal("no cdpguard service")
	}
	lc, ok := f.Services["librechat"]
	if !ok {
		t.Fatal("no librechat service")
	}
	if len(g.Ports) != 0 {
		t.Errorf("cdpguard publishes ports %v: whoever reaches the port drives the browser", g.Ports)
	}
	if g.Build == nil || g.Build.Dockerfile != "Dockerfile" {
		t.Error("cdpguard must be built from the repository's Dockerfile")
	}
	names := make([]string, 0, len(g.Environment))
	for k := range g.Environment {
		names = append(names, k)
	}
	slices.Sort(names)
	checkEnv(t, "compose.yaml", names, flags)
	if got := g.Environment["CDPGUARD_PUBLIC_HOST"]; got != "cdpguard" {
		t.Errorf("CDPGUARD_PUBLIC_HOST %q: LibreChat sends Host: cdpguard", got)
	}
	if !strings.HasPrefix(g.Environment["CDPGUARD_LISTEN"], "0.0.0.0:") {
		t.Errorf("CDPGUARD_LISTEN %q: must listen beyond the container's loopback", g.Environment["CDPGUARD_LISTEN"])
	}
	if h := g.Environment["SESSION_HEADER"]; h != "" && h != flags["session-header"].def {
		t.Errorf("SESSION_HEADER %q differs from the binary's default %q and librechat.yaml", h, flags["session-header"].def)
	}
	for _, o := range g.SecurityOpt {
		if strings.Contains(o, "no-sandbox") {
			t.Error("compose turns Chromium's sandbox off")
		}
	}
	if strings.Contains(g.Environment["CDPGUARD_CHROME_FLAGS"], "no-sandbox") {
		t.Error("compose turns Chromium's sandbox off")
	}
	if lc.DependsOn["cdpguard"].Condition != "service_healthy" {
		t.Error("librechat should wait for cdpguard's HEALTHCHECK (/readyz)")
	}
	// A network both share, internal (no route out).
	var shared string
	for _, n := range g.Networks {
		if slices.Contains(lc.Networks, n) {
			if net := f.Networks[n]; net != nil && net.Internal {
				shared = n
			}
		}
	}
	if shared == "" {
		t.Errorf("cdpguard %v and librechat %v share no internal network", g.Networks, lc.Networks)
	}
	for _, n := range append(append([]string{}, g.Networks...), lc.Networks...) {
		if _, ok := f.Networks[n]; !ok && n != "default" {
			t.Errorf("network %q is not declared", n)
		}
	}

	// librechat.yaml points LibreChat's MCP client at cdpguard's /mcp with
	// the user header.
	lcData, err := os.ReadFile("librechat.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var lcCfg struct {
		Version     string `json:"version"`
		MCPSettings struct {
			AllowedDomains   []string `json:"allowedDomains"`
			AllowedAddresses []string `json:"allowedAddresses"`
		} `json:"mcpSettings"`
		MCPServers map[string]struct {
			Type               string            `json:"type"`
			URL                string            `json:"url"`
			Headers            map[string]string `json:"headers"`
			ServerInstructions bool              `json:"serverInstructions"`
			Timeout            int               `json:"timeout"`
		} `json:"mcpServers"`
	}
	if err := yaml.UnmarshalStrict(lcData, &lcCfg); err != nil {
		t.Fatalf("librechat.yaml: %v", err)
	}
	port := listenPort(t, g.Environment["CDPGUARD_LISTEN"])
	srv, ok := lcCfg.MCPServers["browser"]
	if !ok {
		t.Fatal("librechat.yaml has no mcpServers.browser")
	}
	if want := "http://cdpguard:" + port + "/mcp"; srv.URL != want {
		t.Errorf("MCP url %q, want %q", srv.URL, want)
	}
	// allowedAddresses exempts cdpguard's one host:port from LibreChat's
	// SSRF block; allowedDomains would turn on strict whitelist mode for
	// every other MCP server too.
	if len(lcCfg.MCPSettings.AllowedDomains) != 0 {
		t.Error("librechat.yaml sets mcpSettings.allowedDomains (strict whitelist for every MCP server); use allowedAddresses")
	}
	if !slices.Contains(lcCfg.MCPSettings.AllowedAddresses, "cdpguard:"+port) {
		t.Errorf("mcpSettings.allowedAddresses %q lacks cdpguard:%s", lcCfg.MCPSettings.AllowedAddresses, port)
	}
	if srv.Type != "streamable-http" {
		t.Errorf("MCP type %q, want streamable-http", srv.Type)
	}
	if v := srv.Headers[flags["session-header"].def]; v != "{{LIBRECHAT_USER_ID}}" {
		t.Errorf("MCP header %s = %q, want {{LIBRECHAT_USER_ID}}", flags["session-header"].def, v)
	}
	if svc, ok := f.Services["librechat"]; ok && !slices.ContainsFunc(svc.Volumes, func(v string) bool { return strings.HasPrefix(v, "./librechat.yaml:") }) {
		t.Error("the librechat service does not mount librechat.yaml")
	}
}
