package egress

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// serveScoped runs p.ServeScoped on a new loopback listener; the returned
// func closes the listener and waits for ServeScoped to return.
func serveScoped(t *testing.T, p *Proxy, s Scope) (string, func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.ServeScoped(l, s) }()
	stop := func() {
		_ = l.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("ServeScoped: %v", err)
			}
		case <-time.After(waitBound):
			t.Error("ServeScoped did not return after its listener closed")
		}
	}
	return l.Addr().String(), stop
}

// TestServeScoped: each listener judges with its own DecideFunc, one
// scope cannot reach another scope's port (even with loopback permitted),
// and closing a scope's listener ends its tunnels but not the others'.
func TestServeScoped(t *testing.T) {
	echo := startEcho(t)
	shared := newAllow("allowed.test")
	var mu sync.Mutex
	tags := map[any]int{}
	p, sharedAddr := startProxy(t, Options{
		Decide:       shared.decide,
		HostMap:      testMap(t),
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		OnRefuse: func(r Refusal) {
			mu.Lock()
			tags[r.Tag]++
			mu.Unlock()
		},
	})
	alice := newAllow("allowed.test", "granted.test", "127.0.0.1")
	aliceAddr, stopAlice := serveScoped(t, p, Scope{Decide: alice.decide, Tag: "alice"})
	bob := newAllow("allowed.test", "127.0.0.1")
	bobAddr, stopBob := serveScoped(t, p, Scope{Decide: bob.decide, Tag: "bob"})
	defer stopBob()

	granted := hostPort("granted.test", echo.port())
	if r := rawConnect(t, aliceAddr, granted); r.status != 200 {
		t.Fatalf("alice's listener refused her granted host: %d %s", r.status, r.body)
	} else {
		echoThrough(t, r, "hello")
	}
	before := echo.hits.Load()
	for name, addr := range map[string]string{"bob": bobAddr, "shared": sharedAddr} {
		if r := rawConnect(t, addr, granted); r.status != 403 {
			t.Errorf("%s's listener let alice's granted host through: %d", name, r.status)
		}
	}
	if n := echo.hits.Load() - before; n != 0 {
		t.Errorf("the granted host's listener saw %d connections from other scopes", n)
	}
	if len(shared.Calls()) == 0 || len(bob.Calls()) == 0 {
		t.Error("the shared or bob's DecideFunc was not consulted")
	}
	mu.Lock()
	if tags["bob"] != 1 || tags[nil] != 1 || tags["alice"] != 0 {
		t.Errorf("refusal tags = %v; want bob 1, nil (shared) 1", tags)
	}
	mu.Unlock()

	// Bob aims at alice's listener (and the shared one) as a destination:
	// refused as the proxy itself, although bob may dial 127.0.0.1.
	for _, target := range []string{aliceAddr, sharedAddr} {
		r := rawConnect(t, bobAddr, target)
		if r.status != 403 || !strings.Contains(r.body, "proxy itself") {
			t.Errorf("bob reached the proxy listener %s: %d %s", target, r.status, r.body)
		}
	}

	// Alice's session ends: her tunnel closes, her port stops answering,
	// bob's tunnel lives on.
	ra := rawConnect(t, aliceAddr, granted)
	rb := rawConnect(t, bobAddr, hostPort("allowed.test", echo.port()))
	if ra.status != 200 || rb.status != 200 {
		t.Fatalf("tunnels: alice %d, bob %d", ra.status, rb.status)
	}
	stopAlice()
	_ = ra.conn.SetReadDeadline(time.Now().Add(waitBound))
	if _, err := ra.br.ReadByte(); err == nil || !isEOFish(err) {
		t.Errorf("alice's tunnel after her listener closed: %v", err)
	}
	if c, err := net.DialTimeout("tcp", aliceAddr, waitBound); err == nil {
		_ = c.Close()
		t.Error("alice's listener still accepts connections")
	}
	echoThrough(t, rb, "still here")
	if p.isSelf(netip.MustParseAddrPort(aliceAddr)) {
		t.Error("a closed scope's address is still remembered as the proxy's own")
	}
}

// TestServeScopedNilDecide refuses everything.
func TestServeScopedNilDecide(t *testing.T) {
	echo := startEcho(t)
	p, _ := startProxy(t, Options{Decide: newAllow("allowed.test").decide, HostMap: testMap(t)})
	addr, stop := serveScoped(t, p, Scope{})
	defer stop()
	if r := rawConnect(t, addr, hostPort("allowed.test", echo.port())); r.status != 403 {
		t.Errorf("nil decide: %d", r.status)
	}
}

// TestScopeEndRefusesLateTunnel: a tunnel whose dial finishes after its
// scope's listener closed is closed, not registered (the user's session is
// over; review 2026-12-01).
func TestScopeEndRefusesLateTunnel(t *testing.T) {
	var tr tracker
	sc := &scope{}
	tr.closeScope(sc)
	a, b := net.Pipe()
	defer b.Close()
	if tr.add(&trackedConn{Conn: a, t: &tr, scope: sc}, kindTunnel) {
		t.Fatal("a tunnel of an ended scope was registered")
	}
	if _, err := a.Write([]byte("x")); err == nil {
		t.Error("the late tunnel was left open")
	}
	c, d := net.Pipe()
	defer d.Close()
	if !tr.add(&trackedConn{Conn: c, t: &tr, scope: &scope{}}, kindTunnel) {
		t.Error("a tunnel of a live scope was refused")
	}
	if tr.count(kindTunnel) != 1 {
		t.Errorf("count = %d, want 1", tr.count(kindTunnel))
	}
}
