package egress

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/hostmap"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitBound bounds every wait in these tests.
const waitBound = 5 * time.Second

// allowHosts is a DecideFunc allowing exactly the given hosts on any port,
// recording every call.
type allowHosts struct {
	mu    sync.Mutex
	hosts map[string]bool
	calls []string
}

func newAllow(hosts ...string) *allowHosts {
	a := &allowHosts{hosts: map[string]bool{}}
	for _, h := range hosts {
		a.hosts[h] = true
	}
	return a
}

func (a *allowHosts) decide(host string, port int) (bool, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, host+":"+strconv.Itoa(port))
	if a.hosts[host] {
		return true, "allowed by test"
	}
	return false, "not on the allowlist"
}

func (a *allowHosts) Calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.calls...)
}

// fakeResolver answers from a script per host and counts lookups.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr // successive answers; the last repeats
	lookups map[string]int
}

func newResolver() *fakeResolver {
	return &fakeResolver{answers: map[string][][]netip.Addr{}, lookups: map[string]int{}}
}

func (r *fakeResolver) set(host string, answers ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range answers {
		r.answers[host] = append(r.answers[host], []netip.Addr{netip.MustParseAddr(a)})
	}
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.lookups[host]
	r.lookups[host]++
	as := r.answers[host]
	if len(as) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return as[min(n, len(as)-1)], nil
}

func (r *fakeResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups[host]
}

// testMap maps every *.test name to 127.0.0.1, as the design's e2e setup does.
func testMap(t testing.TB) *hostmap.Map {
	t.Helper()
	m, err := hostmap.Parse([]string{"*.test=127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// startProxy runs a proxy on loopback until the test ends.
func startProxy(t testing.TB, opts Options, tweak ...func(*Proxy)) (*Proxy, string) {
	t.Helper()
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range tweak {
		f(p)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(l) }()
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(waitBound):
			t.Error("Serve did not return after Close")
		}
	})
	return p, l.Addr().String()
}

// echoServer is a TCP listener that counts connections and echoes bytes.
type echoServer struct {
	l    net.Listener
	hits atomic.Int64
	wg   sync.WaitGroup
	mu   sync.Mutex
	open map[net.Conn]bool
}

func startEcho(t testing.TB) *echoServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{l: l, open: map[net.Conn]bool{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.hits.Add(1)
			s.mu.Lock()
			s.open[c] = true
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				_, _ = io.Copy(c, c)
				_ = c.Close()
				s.mu.Lock()
				delete(s.open, c)
				s.mu.Unlock()
			}()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		s.mu.Lock()
		for c := range s.open {
			_ = c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *echoServer) port() int { return s.l.Addr().(*net.TCPAddr).Port }

// connectResult is what a hand-written CONNECT got back.
type connectResult struct {
	status int
	body   string
	conn   net.Conn      // open tunnel when status is 200
	br     *bufio.Reader // reads from the tunnel
}

// rawConnect sends "CONNECT target" to the proxy the way Chrome does, and
// reads the reply. The connection is closed at test end.
func rawConnect(t testing.TB, proxyAddr, target string) connectResult {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxyAddr, waitBound)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(waitBound))
	if _, err := io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+
		"\r\nProxy-Connection: keep-alive\r\nUser-Agent: test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("reading CONNECT reply: %v", err)
	}
	res := connectResult{status: resp.StatusCode, conn: c, br: br}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		res.body = string(b)
	}
	_ = c.SetDeadline(time.Time{})
	return res
}

// echoThrough writes msg into an open tunnel and expects it back.
func echoThrough(t testing.TB, r connectResult, msg string) {
	t.Helper()
	_ = r.conn.SetDeadline(time.Now().Add(waitBound))
	defer func() { _ = r.conn.SetDeadline(time.Time{}) }()
	if _, err := io.WriteString(r.conn, msg); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(r.br, buf); err != nil {
		t.Fatalf("echo: %v", err)
	}
	if string(buf) != msg {
		t.Fatalf("echo = %q, want %q", buf, msg)
	}
}

// isEOFish reports whether err is how a closed tunnel shows up to a reader.
func isEOFish(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		strings.Contains(err.Error(), "connection reset")
}

func hostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

func itoa(n int) string { return strconv.Itoa(n) }
