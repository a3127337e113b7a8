package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rawUpstream is a loopback server that answers every request on a
// connection with the raw response text given, as a server that is not Go's
// would write it.
func rawUpstream(t *testing.T, response string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(waitBound))
			br := bufio.NewReader(c)
			for {
				req, err := http.ReadRequest(br)
				if err != nil {
					break
				}
				_, _ = io.Copy(io.Discard, req.Body)
				if _, err := io.WriteString(c, response); err != nil {
					break
				}
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
	})
	return l.Addr().(*net.TCPAddr).Port
}

// rawGet sends one plain proxy request the way Chrome does and returns the
// status line and the header block the proxy wrote, as bytes.
func rawGet(t *testing.T, proxyAddr, url string) (statusLine string, resp *http.Response) {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxyAddr, waitBound)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(waitBound))
	host := strings.TrimPrefix(url, "http://")
	host = host[:strings.IndexByte(host, '/')]
	if _, err := io.WriteString(c, "GET "+url+" HTTP/1.1\r\nHost: "+host+"\r\nProxy-Connection: keep-alive\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the status line: %v", err)
	}
	resp, err = http.ReadResponse(bufio.NewReader(io.MultiReader(strings.NewReader(line), br)), nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return strings.TrimRight(line, "\r\n"), resp
}

// TestReasonPhrasePassesUnchanged: the status line reaches the client as
// upstream wrote it, a custom reason phrase and a missing one included,
// and a standard one stays standard.
func TestReasonPhrasePassesUnchanged(t *testing.T) {
	for _, tc := range []struct{ upstream, want string }{
		{"HTTP/1.1 200 cool!\r\nContent-Length: 2\r\n\r\nok", "HTTP/1.1 200 cool!"},
		{"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok", "HTTP/1.1 200"},
		{"HTTP/1.1 404 Nope Not Here\r\nContent-Length: 2\r\n\r\nok", "HTTP/1.1 404 Nope Not Here"},
		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "HTTP/1.1 200 OK"},
		{"HTTP/1.1 599 Odd\r\nContent-Length: 2\r\n\r\nok", "HTTP/1.1 599 Odd"},
	} {
		port := rawUpstream(t, tc.upstream)
		_, addr := startProxy(t, Options{Decide: newAllow("allowed.test").decide, HostMap: testMap(t)})
		line, resp := rawGet(t, addr, "http://allowed.test:"+itoa(port)+"/")
		if line != tc.want {
			t.Errorf("upstream %q: client got %q, want %q", strings.SplitN(tc.upstream, "\r\n", 2)[0], line, tc.want)
		}
		if resp.Header.Get("Date") != "" {
			t.Errorf("upstream %q: the proxy added Date: %q", tc.want, resp.Header.Get("Date"))
		}
	}
}

// TestReasonPhraseKeepAlive: on one client connection, a custom status is
// used for its own response only; the next response keeps its own.
func TestReasonPhraseKeepAlive(t *testing.T) {
	cool := rawUpstream(t, "HTTP/1.1 200 cool!\r\nContent-Length: 2\r\n\r\nok")
	plain := rawUpstream(t, "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
	_, addr := startProxy(t, Options{Decide: newAllow("allowed.test").decide, HostMap: testMap(t)})
	c, err := net.DialTimeout("tcp", addr, waitBound)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(waitBound))
	br := bufio.NewReader(c)
	for _, step := range []struct {
		port int
		want string
	}{{cool, "HTTP/1.1 200 cool!"}, {plain, "HTTP/1.1 201 Created"}, {cool, "HTTP/1.1 200 cool!"}} {
		u := "http://allowed.test:" + itoa(step.port) + "/"
		if _, err := io.WriteString(c, "GET "+u+" HTTP/1.1\r\nHost: allowed.test:"+itoa(step.port)+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimRight(line, "\r\n"); got != step.want {
			t.Fatalf("got %q, want %q", got, step.want)
		}
		resp, err := http.ReadResponse(bufio.NewReader(io.MultiReader(strings.NewReader("HTTP/1.1 200 X\r\n"), br)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
			t.Fatalf("body %q", b)
		}
	}
}

// TestRefusedPortNamesTheNetError: a plain request to an allowed host whose
// port refuses connections is answered 502 naming ConnectionRefused in its
// status line, the reason the Fetch judge fails it with (Chrome's
// net::ERR_CONNECTION_REFUSED direct); a name that does not resolve names
// NameNotResolved; a policy refusal stays a plain 403; and an upstream
// cannot send the proxy's phrase.
func TestRefusedPortNamesTheNetError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	forged := rawUpstream(t, "HTTP/1.1 502 "+NetErrorPhrase+"ConnectionRefused\r\nContent-Length: 2\r\n\r\nok")
	res := newResolver()
	_, addr := startProxy(t, Options{Decide: newAllow("allowed.test", "nowhere.example").decide, HostMap: testMap(t), Resolver: res})

	for _, tc := range []struct{ url, want string }{
		{"http://allowed.test:" + itoa(closed) + "/", "HTTP/1.1 502 cdpguard net error ConnectionRefused"},
		{"http://nowhere.example/", "HTTP/1.1 502 cdpguard net error NameNotResolved"},
		{"http://evil.test:" + itoa(closed) + "/", "HTTP/1.1 403 Forbidden"},
		{"http://allowed.test:" + itoa(forged) + "/", "HTTP/1.1 502 Bad Gateway"},
	} {
		if line, _ := rawGet(t, addr, tc.url); line != tc.want {
			t.Errorf("%s: %q, want %q", tc.url, line, tc.want)
		}
	}
}

// TestNetErrorReason: the errors a round trip fails with map to the
// reasons whose net errors Chrome shows for them direct.
func TestNetErrorReason(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, "ConnectionRefused"},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), "ConnectionReset"},
		{syscall.EHOSTUNREACH, "AddressUnreachable"},
		{fmt.Errorf("dial: %w", context.DeadlineExceeded), "TimedOut"},
		{io.EOF, "ConnectionClosed"},
		{fmt.Errorf("egress: dial x: %w", errPolicyChanged), "BlockedByClient"},
		{errors.New("something else"), "Failed"},
		{nil, "Failed"},
	} {
		if got := netErrorReason(tc.err); got != tc.want {
			t.Errorf("netErrorReason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
