package egress

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// recordingServer is an HTTP server on loopback that records the headers of
// each request it gets.
type recordingServer struct {
	*httptest.Server
	hits atomic.Int64
	mu   sync.Mutex
	last http.Header
	host string
}

func startRecording(t testing.TB) *recordingServer {
	t.Helper()
	s := &recordingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		s.last, s.host = r.Header.Clone(), r.Host
		s.mu.Unlock()
		_, _ = io.WriteString(w, "hello from "+r.Host+r.URL.RequestURI())
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *recordingServer) port() int { return s.Listener.Addr().(*net.TCPAddr).Port }

// proxyClient is an http.Client using the proxy for plain http, with
// credentials in the proxy URL so Go sends Proxy-Authorization.
func proxyClient(t testing.TB, proxyAddr string) *http.Client {
	t.Helper()
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", User: url.UserPassword("u", "secret"), Host: proxyAddr})}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: waitBound}
}

func get(t testing.TB, c *http.Client, u string, hdr http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestPlainHTTPAllowedAndForbidden(t *testing.T) {
	ok := startRecording(t)
	evil := startRecording(t)
	_, addr := startProxy(t, Options{Decide: newAllow("allowed.test").decide, HostMap: testMap(t)})
	c := proxyClient(t, addr)

	u := "http://allowed.test:" + itoa(ok.port()) + "/path?q=1"
	code, body := get(t, c, u, http.Header{"Connection": {"X-Hop"}, "X-Hop": {"1"}})
	if code != 200 || body != "hello from allowed.test:"+itoa(ok.port())+"/path?q=1" {
		t.Fatalf("allowed: %d %q", code, body)
	}
	ok.mu.Lock()
	for _, h := range []string{"Via", "X-Forwarded-For", "Proxy-Authorization", "Proxy-Connection", "X-Hop"} {
		if v := ok.last.Get(h); v != "" {
			t.Errorf("upstream got %s: %q", h, v)
		}
	}
	if ok.host != "allowed.test:"+itoa(ok.port()) {
		t.Errorf("upstream Host %q", ok.host)
	}
	ok.mu.Unlock()

	code, body = get(t, c, "http://evil.test:"+itoa(evil.port())+"/", nil)
	if code != 403 || !strings.Contains(body, "evil.test") {
		t.Fatalf("forbidden: %d %q", code, body)
	}
	code, _ = get(t, c, "http://127.0.0.1:"+itoa(evil.port())+"/", nil)
	if code != 403 {
		t.Fatalf("loopback literal: %d", code)
	}
	if evil.hits.Load() != 0 {
		t.Fatalf("forbidden server hits = %d", evil.hits.Load())
	}
}

func TestPlainHTTPRebindingDialsChecked(t *testing.T) {
	srv := startRecording(t)
	res := newResolver()
	res.set("rebind.example", "203.0.113.7", "127.0.0.1")
	var dials atomic.Value
	_, addr := startProxy(t, Options{Decide: newAllow("rebind.example").decide, Resolver: res},
		func(p *Proxy) {
			p.dial = func(ctx context.Context, network, a string) (net.Conn, error) {
				dials.Store(a)
				var d net.Dialer
				return d.DialContext(ctx, network, srv.Listener.Addr().String())
			}
		})
	code, _ := get(t, proxyClient(t, addr), "http://rebind.example:"+itoa(srv.port())+"/", nil)
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	if n := res.count("rebind.example"); n != 1 {
		t.Errorf("lookups = %d, want 1", n)
	}
	if got, want := dials.Load(), "203.0.113.7:"+itoa(srv.port()); got != want {
		t.Errorf("dialled %v, want %s", got, want)
	}
}

// rawRequest sends one raw request to the proxy and returns the status.
func rawRequest(t testing.TB, proxyAddr, req string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxyAddr, waitBound)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(waitBound))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestNotAProxyRequestAndOtherSchemes(t *testing.T) {
	srv := startRecording(t)
	allowAll := func(string, int) (bool, string) { return true, "" }
	_, addr := startProxy(t, Options{Decide: allowAll, HostMap: testMap(t)})
	if code := rawRequest(t, addr, "GET / HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); code != 400 {
		t.Errorf("origin-form: %d, want 400", code)
	}
	p := itoa(srv.port())
	for _, u := range []string{"ftp://allowed.test:" + p + "/", "https://allowed.test:" + p + "/", "gopher://allowed.test:" + p + "/"} {
		if code := rawRequest(t, addr, "GET "+u+" HTTP/1.1\r\nHost: allowed.test\r\n\r\n"); code != 403 {
			t.Errorf("%s: %d, want 403", u, code)
		}
	}
	if srv.hits.Load() != 0 {
		t.Errorf("server reached by a refused scheme")
	}
}

// wsEcho is a WebSocket server echoing one text message per connection.
func wsEcho(t testing.TB) *recordingServer {
	t.Helper()
	s := &recordingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx, cancel := context.WithTimeout(r.Context(), waitBound)
		defer cancel()
		typ, msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		_ = c.Write(ctx, typ, msg)
		_, _, _ = c.Read(ctx) // until the client closes
	}))
	t.Cleanup(s.Close)
	return s
}

// tunnelConn reads through the bufio.Reader that parsed the CONNECT reply.
type tunnelConn struct {
	net.Conn
	r *bufio.Reader
}

func (c tunnelConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func wsRoundTrip(t *testing.T, u string, hc *http.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatalf("dial %s: %v", u, err)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	_, msg, err := c.Read(ctx)
	if err != nil || string(msg) != "ping" {
		t.Fatalf("echo %q %v", msg, err)
	}
	_ = c.Close(websocket.StatusNormalClosure, "")
}

// TestWebSocketViaConnect does what Chrome does for ws:// behind a proxy:
// CONNECT host:port, then the WebSocket handshake inside the tunnel.
func TestWebSocketViaConnect(t *testing.T) {
	ws := wsEcho(t)
	evil := wsEcho(t)
	p, addr := startProxy(t, Options{Decide: newAllow("allowed.test").decide, HostMap: testMap(t)})

	r := rawConnect(t, addr, hostPort("allowed.test", ws.port()))
	if r.status != 200 {
		t.Fatalf("CONNECT: %d", r.status)
	}
	var used atomic.Bool
	tr := &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
		if used.Swap(true) {
			return nil, net.ErrClosed
		}
		return tunnelConn{Conn: r.conn, r: r.br}, nil
	}}
	defer tr.CloseIdleConnections()
	wsRoundTrip(t, "ws://allowed.test:"+itoa(ws.port())+"/", &http.Client{Transport: tr})

	if r := rawConnect(t, addr, hostPort("evil.test", evil.port())); r.status != 403 {
		t.Fatalf("evil CONNECT: %d", r.status)
	}
	if evil.hits.Load() != 0 || p.Stats().Refused != 1 {
		t.Fatalf("evil hits %d, stats %+v", evil.hits.Load(), p.Stats())
	}
}

// TestWebSocketViaPlainProxyRequest covers clients that send the upgrade as
// an absolute-form GET (Go's client does for ws://), and checks the relay
// lets go of the client connection when the WebSocket ends.
func TestWebSocketViaPlainProxyRequest(t *testing.T) {
	ws := wsEcho(t)
	evil := wsEcho(t)
	p, addr := startProxy(t, Options{Decide: newAllow("allowed.test").decide, HostMap: testMap(t)})
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr})}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	wsRoundTrip(t, "ws://allowed.test:"+itoa(ws.port())+"/", hc)

	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if c, _, err := websocket.Dial(ctx, "ws://evil.test:"+itoa(evil.port())+"/", &websocket.DialOptions{HTTPClient: hc}); err == nil {
		c.CloseNow()
		t.Fatal("evil WebSocket dialled")
	}
	if evil.hits.Load() != 0 {
		t.Fatal("evil server reached")
	}
	tr.CloseIdleConnections()
	deadline := time.Now().Add(waitBound)
	for p.conns.count(kindClient) != 0 || p.conns.count(kindHTTP) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("proxy still holds %d client / %d upstream connections", p.conns.count(kindClient), p.conns.count(kindHTTP))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
