package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/hostmap"
	"github.com/cdpguard/cdpguard/internal/selfaddr"
)

// TestSelfIsEveryHostAddress: with the guard's endpoint on 0.0.0.0, every
// address of the host on its port is the guard, even when the policy, an
// --allow-private range and a --host-map name all allow that address; the
// same address on another port is dialled.
func TestSelfIsEveryHostAddress(t *testing.T) {
	const hostAddr = "192.0.2.7" // one of the host's interface addresses (fake)
	self := selfaddr.NewWithLocal(func() ([]selfaddr.Local, error) {
		return []selfaddr.Local{
			{Prefix: netip.MustParsePrefix("127.0.0.1/8"), Loopback: true},
			{Prefix: netip.MustParsePrefix(hostAddr + "/24")},
		}, nil
	})
	hm, err := hostmap.Parse([]string{"guardhost.test=" + hostAddr})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var dialed []string
	_, addr := startProxy(t, Options{
		Decide:       func(string, int) (bool, string) { return true, "" },
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("0.0.0.0/8")},
		HostMap:      hm,
		Self:         self,
	}, func(p *Proxy) {
		p.dial = func(_ context.Context, _, a string) (net.Conn, error) {
			mu.Lock()
			dialed = append(dialed, a)
			mu.Unlock()
			return nil, errors.New("test: no dial")
		}
	})
	self.Add(netip.MustParseAddrPort("0.0.0.0:9222")) // the endpoint, listening on every address (the guard adds it)

	for _, tgt := range []string{hostAddr + ":9222", "guardhost.test:9222", "127.0.0.1:9222", "0.0.0.0:9222"} {
		if r := rawConnect(t, addr, tgt); r.status != 403 || !strings.Contains(r.body, "proxy itself") {
			t.Errorf("CONNECT %s: status %d %q, want 403 naming the proxy itself", tgt, r.status, r.body)
		}
	}
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr})}
	defer tr.CloseIdleConnections()
	for _, u := range []string{"http://" + hostAddr + ":9222/json/list", "http://guardhost.test:9222/json/close/x"} {
		resp, err := (&http.Client{Transport: tr, Timeout: waitBound}).Get(u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 403 || !strings.Contains(string(b), "proxy itself") {
			t.Errorf("GET %s: status %d %q, want 403 naming the proxy itself", u, resp.StatusCode, b)
		}
	}
	mu.Lock()
	n := len(dialed)
	mu.Unlock()
	if n != 0 {
		t.Fatalf("dialled %v: the guard's own port was dialled", dialed)
	}
	// Control: the same address on another port is allowed and dialled.
	if r := rawConnect(t, addr, hostAddr+":9223"); r.status != 502 {
		t.Errorf("control CONNECT: status %d %q, want 502 after a dial", r.status, r.body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dialed) != 1 || dialed[0] != hostAddr+":9223" {
		t.Fatalf("dials %v, want one to %s:9223", dialed, hostAddr)
	}
}

// TestDialled: the guard's endpoint can tell a connection the proxy dialled
// (by both of its addresses) from any other while it is open, and not
// after it closed.
func TestDialled(t *testing.T) {
	echo := startEcho(t)
	p, addr := startProxy(t, Options{Decide: newAllow("allowed.test").decide, HostMap: testMap(t)})
	r := rawConnect(t, addr, hostPort("allowed.test", echo.port()))
	if r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	echoThrough(t, r, "hello")
	echo.mu.Lock()
	var peer, local netip.AddrPort
	for c := range echo.open {
		peer = c.RemoteAddr().(*net.TCPAddr).AddrPort()
		local = c.LocalAddr().(*net.TCPAddr).AddrPort()
	}
	echo.mu.Unlock()
	if !peer.IsValid() {
		t.Fatal("the echo server holds no connection")
	}
	if !p.Dialled(peer, local) {
		t.Fatalf("Dialled(%v, %v) = false for the proxy's open tunnel", peer, local)
	}
	other := netip.AddrPortFrom(local.Addr(), local.Port()+1)
	if p.Dialled(peer, other) || p.Dialled(netip.AddrPortFrom(peer.Addr(), peer.Port()+1), local) {
		t.Fatal("Dialled true for another connection")
	}
	_ = r.conn.Close()
	deadline := time.Now().Add(waitBound)
	for p.Dialled(peer, local) {
		if time.Now().After(deadline) {
			t.Fatal("Dialled still true after the tunnel closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
