package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// Issue 9's figures: cdpguard's own MCP server (/mcp).
const (
	mcpUsers        = 10  // MCP users connected for the RSS reading
	mcpPerUserMB    = 2.0 // target: RSS per connected MCP user above idle
	mcpReadRatioMax = 0.25
	mcpNavPairs     = 15
)

// mcpFixtures are the fixture articles whose browser_read and
// browser_snapshot sizes are compared.
var mcpFixtures = []string{"aclu", "ars-1", "bbc-1", "cnn", "engadget"}

type mcpArticle struct {
	Name          string  `json:"name"`
	ReadChars     int     `json:"readChars"`
	SnapshotChars int     `json:"snapshotChars"`
	Ratio         float64 `json:"ratio"`
}

// mcpReport holds the MCP figures.
type mcpReport struct {
	IdleRSSMB        float64      `json:"idleRssMB"`
	OneUserRSSMB     float64      `json:"oneUserRssMB"`
	UsersRSSMB       float64      `json:"usersRssMB"`
	Users            int          `json:"users"`
	PerUserMB        float64      `json:"perUserMB"`
	PlaywrightMCPMB  float64      `json:"playwrightMcpRssMB,omitzero"`
	PlaywrightMCPErr string       `json:"playwrightMcpError,omitzero"`
	Articles         []mcpArticle `json:"articles"`
	NavMCPms         float64      `json:"navigateMcpMs"`
	NavCDPms         float64      `json:"navigateCdpMs"`
	NavPairs         int          `json:"navigatePairs"`
	ClickMs          float64      `json:"clickNoNavigationMs"`
	TypeMs           float64      `json:"typeMs"`
	ClickChars       int          `json:"clickResultChars"`
	InputPairs       int          `json:"inputCalls"`
	Error            string       `json:"error,omitzero"`
}

type headerTransport struct{ user string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-LibreChat-User", h.user)
	return http.DefaultTransport.RoundTrip(r)
}

func mcpSession(ctx context.Context, base, user string) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: headerTransport{user}}}, nil)
}

// mcpCall runs a tool and returns its text.
func mcpCall(ctx context.Context, s *mcp.ClientSession, name string, args map[string]any) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, loadTimeout)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	if res.IsError {
		return "", fmt.Errorf("%s: tool error: %.300s", name, b.String())
	}
	return b.String(), nil
}

// fixtureSite serves the readability fixtures at /fx/<name> and a blank
// page at /blank.
func fixtureSite(dir string) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/fx/{name}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(dir, filepath.Base(r.PathValue("name")), "source.html"))
	})
	mux.HandleFunc("/blank", func(w http.ResponseWriter, _ *http.Request) {
		writeBody(w, "text/html", []byte("<!doctype html><title>blank</title><p>bench</p>"))
	})
	mux.HandleFunc("/ui", func(w http.ResponseWriter, _ *http.Request) {
		writeBody(w, "text/html", []byte(`<!doctype html><title>ui</title><button onclick="this.textContent+='!'">Press</button><label>Field <input type="text"></label>`))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	base := fmt.Sprintf("http://%s:%d", siteHost, ln.Addr().(*net.TCPAddr).Port)
	return base, func() { _ = srv.Close() }, nil
}

var nextOffsetRE = regexp.MustCompile(`offset=(\d+) \(no url\)`)

// readAll reads a page with browser_read, section by section.
func readAll(ctx context.Context, s *mcp.ClientSession, url string) (int, error) {
	total := 0
	args := map[string]any{"url": url}
	for range 50 {
		out, err := mcpCall(ctx, s, "browser_read", args)
		if err != nil {
			return 0, err
		}
		total += len([]rune(out))
		m := nextOffsetRE.FindStringSubmatch(out)
		if m == nil {
			return total, nil
		}
		off, _ := strconv.Atoi(m[1])
		args = map[string]any{"offset": off}
	}
	return total, nil
}

func measureMCP(ctx context.Context, o options) (*mcpReport, error) {
	rep := &mcpReport{Users: mcpUsers}
	bin, done, err := daemonBinary(ctx, o)
	if err != nil {
		return rep, err
	}
	defer done()
	root := repoRoot(ctx)
	site, stopSite, err := fixtureSite(filepath.Join(root, "..", "shared", "fixtures", "readability"))
	if err != nil {
		return rep, err
	}
	defer stopSite()
	b, err := startGuardBinary(ctx, bin, o.chrome)
	if err != nil {
		return rep, err
	}
	defer b.stop()
	settle := func() error {
		select {
		case <-time.After(o.memSettle):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}

	// Memory: idle, one MCP user (the server's one-off start-up), then
	// mcpUsers more, each with a tab on a small page.
	if err := settle(); err != nil {
		return rep, err
	}
	if rep.IdleRSSMB, err = rssMB(b.cmd.Process.Pid); err != nil {
		return rep, err
	}
	var sessions []*mcp.ClientSession
	defer func() {
		for _, s := range sessions {
			_ = s.Close()
		}
	}()
	for i := 0; i <= mcpUsers; i++ {
		s, err := mcpSession(ctx, b.url, fmt.Sprintf("bench-mcp-%d", i))
		if err != nil {
			return rep, fmt.Errorf("mcp user %d: %w", i, err)
		}
		sessions = append(sessions, s)
		if _, err := mcpCall(ctx, s, "browser_navigate", map[string]any{"url": site + "/blank"}); err != nil {
			return rep, fmt.Errorf("mcp user %d: %w", i, err)
		}
		if i == 0 {
			if err := settle(); err != nil {
				return rep, err
			}
			if rep.OneUserRSSMB, err = rssMB(b.cmd.Process.Pid); err != nil {
				return rep, err
			}
		}
	}
	if err := settle(); err != nil {
		return rep, err
	}
	if rep.UsersRSSMB, err = rssMB(b.cmd.Process.Pid); err != nil {
		return rep, err
	}
	rep.PerUserMB = (rep.UsersRSSMB - rep.OneUserRSSMB) / mcpUsers
	fmt.Fprintf(os.Stderr, "  mcp memory: idle %.1f MB, 1 user %.1f MB, %d more users %.1f MB\n", rep.IdleRSSMB, rep.OneUserRSSMB, mcpUsers, rep.UsersRSSMB)

	// One @playwright/mcp process, as the per-user alternative runs it.
	rep.PlaywrightMCPMB, err = playwrightMCPRSS(ctx, root, b.url, site+"/blank")
	if err != nil {
		rep.PlaywrightMCPErr = err.Error()
		fmt.Fprintln(os.Stderr, "  @playwright/mcp:", err)
	}

	// browser_read vs browser_snapshot on fixture articles.
	s := sessions[0]
	for _, name := range mcpFixtures {
		url := site + "/fx/" + name
		read, err := readAll(ctx, s, url)
		if err != nil {
			return rep, fmt.Errorf("read %s: %w", name, err)
		}
		snap, err := mcpCall(ctx, s, "browser_snapshot", nil)
		if err != nil {
			return rep, fmt.Errorf("snapshot %s: %w", name, err)
		}
		a := mcpArticle{Name: name, ReadChars: read, SnapshotChars: len([]rune(snap))}
		a.Ratio = float64(a.ReadChars) / float64(max(a.SnapshotChars, 1))
		rep.Articles = append(rep.Articles, a)
	}

	// browser_navigate through MCP vs Page.navigate + load over CDP.
	ws, err := cdptest.BrowserURL(ctx, b.url, http.Header{"X-LibreChat-User": {"bench-nav-cdp"}})
	if err != nil {
		return rep, err
	}
	c, err := cdptest.Dial(ctx, ws, cdptest.Options{Header: http.Header{"X-LibreChat-User": {"bench-nav-cdp"}}})
	if err != nil {
		return rep, err
	}
	defer c.Close()
	p, err := openPage(ctx, c, "")
	if err != nil {
		return rep, err
	}
	var viaMCP, viaCDP []float64
	for i := range mcpNavPairs + 2 {
		url := fmt.Sprintf("%s/blank?%d", site, i)
		start := time.Now()
		if _, err := mcpCall(ctx, sessions[1], "browser_navigate", map[string]any{"url": url}); err != nil {
			return rep, err
		}
		m := time.Since(start)
		start = time.Now()
		if _, err := p.load(ctx, url+"c"); err != nil {
			return rep, err
		}
		d := time.Since(start)
		if i >= 2 { // two warm-up pairs
			viaMCP = append(viaMCP, float64(m.Microseconds())/1000)
			viaCDP = append(viaCDP, float64(d.Microseconds())/1000)
		}
	}
	rep.NavMCPms, rep.NavCDPms, rep.NavPairs = median(viaMCP), median(viaCDP), len(viaMCP)
	if err := measureInput(ctx, sessions[1], site, rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// measureInput times browser_click on a button that starts no navigation
// and browser_type into a field (refs from a snapshot, with element, so
// that older servers take the same arguments).
func measureInput(ctx context.Context, s *mcp.ClientSession, site string, rep *mcpReport) error {
	if _, err := mcpCall(ctx, s, "browser_navigate", map[string]any{"url": site + "/ui"}); err != nil {
		return err
	}
	snap, err := mcpCall(ctx, s, "browser_snapshot", nil)
	if err != nil {
		return err
	}
	refs := refRE.FindAllStringSubmatch(snap, -1)
	if len(refs) < 2 {
		return fmt.Errorf("ui page: refs %v in %q", refs, snap)
	}
	var clicks, types []float64
	for i := range mcpNavPairs + 2 {
		start := time.Now()
		out, err := mcpCall(ctx, s, "browser_click", map[string]any{"element": "Press", "ref": refs[0][1]})
		if err != nil {
			return err
		}
		c := time.Since(start)
		rep.ClickChars = len(out)
		start = time.Now()
		if _, err := mcpCall(ctx, s, "browser_type", map[string]any{"element": "Field", "ref": refs[1][1], "text": "bench"}); err != nil {
			return err
		}
		d := time.Since(start)
		if i >= 2 {
			clicks = append(clicks, float64(c.Microseconds())/1000)
			types = append(types, float64(d.Microseconds())/1000)
		}
	}
	rep.ClickMs, rep.TypeMs, rep.InputPairs = median(clicks), median(types), len(clicks)
	return nil
}

var refRE = regexp.MustCompile(`\[ref=(e[0-9]+)\]`)

// playwrightMCPRSS starts one @playwright/mcp (stdio, --cdp-endpoint at
// the guard, one user's header), navigates once, and reads its RSS.
func playwrightMCPRSS(ctx context.Context, root, guardURL, page string) (float64, error) {
	cli := filepath.Join(root, "e2e", "node_modules", "@playwright", "mcp", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		return 0, fmt.Errorf("@playwright/mcp not installed in e2e/node_modules: %w", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return 0, err
	}
	out, err := os.MkdirTemp("", "bench-pwmcp-")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(out) }()
	ctx, cancel := context.WithTimeout(ctx, 2*loadTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, cli, "--cdp-endpoint", guardURL, "--cdp-header", "X-LibreChat-User:bench-pw", "--output-dir", out)
	cmd.Stderr = io.Discard
	s, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return 0, fmt.Errorf("start @playwright/mcp: %w", err)
	}
	defer func() { _ = s.Close() }()
	if _, err := mcpCall(ctx, s, "browser_navigate", map[string]any{"url": page}); err != nil {
		return 0, err
	}
	time.Sleep(time.Second)
	return rssMB(cmd.Process.Pid)
}

func printMCP(w io.Writer, r *mcpReport) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "\ncdpguard MCP server (/mcp)\n")
	if r.Error != "" {
		fmt.Fprintf(w, "ERROR: %s\n", oneLine(r.Error))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "cdpguard RSS idle / 1 MCP user / +%d users\t%.1f / %.1f / %.1f MB\t\n", r.Users, r.IdleRSSMB, r.OneUserRSSMB, r.UsersRSSMB)
	fmt.Fprintf(tw, "cdpguard RSS per MCP user\t%.2f MB\ttarget ≤ %.0f MB: %s\t\n", r.PerUserMB, mcpPerUserMB, yesNo(r.PerUserMB <= mcpPerUserMB))
	if r.PlaywrightMCPErr != "" {
		fmt.Fprintf(tw, "@playwright/mcp process per user\tERROR: %s\t\n", oneLine(r.PlaywrightMCPErr))
	} else {
		fmt.Fprintf(tw, "@playwright/mcp process per user (RSS)\t%.1f MB\t\n", r.PlaywrightMCPMB)
	}
	for _, a := range r.Articles {
		fmt.Fprintf(tw, "read/snapshot chars, %s\t%d / %d = %.2fx\ttarget ≤ %.2fx: %s\t\n", a.Name, a.ReadChars, a.SnapshotChars, a.Ratio, mcpReadRatioMax, yesNo(a.Ratio <= mcpReadRatioMax))
	}
	fmt.Fprintf(tw, "navigate, MCP tool vs CDP (median of %d)\t%.1f ms vs %.1f ms\t\n", r.NavPairs, r.NavMCPms, r.NavCDPms)
	fmt.Fprintf(tw, "click without navigation / type (median of %d)\t%.1f ms / %.1f ms (click result %d chars)\t\n", r.InputPairs, r.ClickMs, r.TypeMs, r.ClickChars)
	_ = tw.Flush()
}
