package cdpguard_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cdpguard/cdpguard/cdpguard"
)

// grantHost is a test listener for one *.test name: it serves the test
// page at /, echoes one WebSocket message at /ws, and counts every
// connection and request it sees.
type grantHost struct {
	port  int
	conns atomic.Int64
	reqs  atomic.Int64
	paths sync.Map // path → *atomic.Int64
}

func (h *grantHost) pathHits(path string) int64 {
	if n, ok := h.paths.Load(path); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

func (h *grantHost) hits() int64 { return h.conns.Load() + h.reqs.Load() }

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func startGrantHost(t *testing.T, page, worker []byte) *grantHost {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &grantHost{port: ln.Addr().(*net.TCPAddr).Port}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.reqs.Add(1)
		n, _ := h.paths.LoadOrStore(r.URL.Path, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	})
	mux.HandleFunc("/worker.js", func(w http.ResponseWriter, r *http.Request) {
		h.reqs.Add(1)
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = w.Write(worker)
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		h.reqs.Add(1)
		n, _ := h.paths.LoadOrStore(r.URL.Path, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		typ, b, err := c.Read(ctx)
		if err == nil {
			_ = c.Write(ctx, typ, b)
		}
		_, _, _ = c.Read(ctx) // until the page closes it
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(countingListener{Listener: ln, n: &h.conns}) }()
	t.Cleanup(func() { _ = srv.Close() })
	return h
}

type policyGrants struct {
	Grants []struct {
		Host string    `json:"host"`
		Via  string    `json:"via"`
		At   time.Time `json:"at"`
	} `json:"grants"`
}

func (p policyGrants) hosts() string {
	var hs []string
	for _, g := range p.Grants {
		hs = append(hs, g.Host+"/"+g.Via)
	}
	return strings.Join(hs, ",")
}

func httpPolicy(t *testing.T, g *cdpguard.Guard, user string) policyGrants {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, g.URL()+"/policy", nil)
	req.Header.Set("X-LibreChat-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var p policyGrants
	if err := jsonv2.Unmarshal(b, &p); err != nil || p.Grants == nil {
		t.Fatalf("/policy for %s: %v %s (want a grants list)", user, err, b)
	}
	return p
}

// proxyGet fetches u through the egress proxy listener at addr, as the
// browser would, and returns the status code.
func proxyGet(t *testing.T, addr, u string) int {
	t.Helper()
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr})}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(u)
	if err != nil {
		t.Fatalf("GET %s via %s: %v", u, addr, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// mcpCall calls one MCP tool as user through /mcp.
func mcpCall(ctx context.Context, t *testing.T, g *cdpguard.Guard, user, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "grants-test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.URL() + "/mcp", HTTPClient: &http.Client{Transport: userRT(user)}}, nil)
	if err != nil {
		t.Fatalf("MCP connect as %s: %v", user, err)
	}
	defer s.Close()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("MCP %s as %s: %v", tool, user, err)
	}
	return res
}

func mcpText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// userRT sends the session header on every MCP request.
type userRT string

func (u userRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-LibreChat-User", string(u))
	return http.DefaultTransport.RoundTrip(r)
}

func httpGet(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
