package egress

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestRecheckClosesRefusedTunnels opens tunnels to two hosts, removes one
// from the policy and checks Recheck closes that tunnel only.
func TestRecheckClosesRefusedTunnels(t *testing.T) {
	echo := startEcho(t)
	allow := newAllow("kept.test", "removed.test")
	p, addr := startProxy(t, Options{Decide: allow.decide, HostMap: testMap(t)})
	kept := rawConnect(t, addr, hostPort("kept.test", echo.port()))
	removed := rawConnect(t, addr, hostPort("removed.test", echo.port()))
	if kept.status != 200 || removed.status != 200 {
		t.Fatalf("status %d, %d", kept.status, removed.status)
	}
	echoThrough(t, kept, "kept before")
	echoThrough(t, removed, "removed before")
	if n := p.Recheck(); n != 0 {
		t.Fatalf("Recheck under the same policy closed %d tunnels", n)
	}
	allow.mu.Lock()
	delete(allow.hosts, "removed.test")
	allow.mu.Unlock()
	if n := p.Recheck(); n != 1 {
		t.Fatalf("Recheck closed %d tunnels, want 1", n)
	}
	_ = removed.conn.SetReadDeadline(time.Now().Add(waitBound))
	if _, err := removed.br.ReadByte(); err == nil || !isEOFish(err) {
		t.Fatalf("the tunnel to the removed host is still open: %v", err)
	}
	echoThrough(t, kept, "kept after")
	if got := p.Stats().ActiveTunnels; got != 1 {
		t.Errorf("active tunnels %d, want 1", got)
	}
}

// TestScopeAllowAddrs: a scope's AllowAddrs replaces the proxy's, so one
// user's policy group cannot dial a private address another group named.
func TestScopeAllowAddrs(t *testing.T) {
	p, err := New(Options{AllowAddrs: func(a netip.Addr) bool { return a == netip.MustParseAddr("10.0.0.1") }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	own := &scope{allowAddrs: func(a netip.Addr) bool { return a == netip.MustParseAddr("10.0.0.2") }}
	for _, c := range []struct {
		sc   *scope
		addr string
		want bool
	}{
		{nil, "10.0.0.1", true},
		{nil, "10.0.0.2", false},
		{own, "10.0.0.1", false},
		{own, "10.0.0.2", true},
		{&scope{}, "10.0.0.1", true}, // no override: the proxy's
	} {
		if ok, _ := p.addrPermitted(netip.MustParseAddr(c.addr), false, c.sc); ok != c.want {
			t.Errorf("scope %v addr %s: permitted %v, want %v", c.sc != nil, c.addr, ok, c.want)
		}
	}
}

// TestRecheckDuringDial: a reload whose Recheck runs while a tunnel's dial
// is under way (judged by the old policy, not yet registered, so Recheck
// cannot see it) still costs the tunnel its host: the dial judges it again.
func TestRecheckDuringDial(t *testing.T) {
	echo := startEcho(t)
	allow := newAllow("late.test")
	p, addr := startProxy(t, Options{Decide: allow.decide, HostMap: testMap(t)}, func(p *Proxy) {
		realDial := p.dial
		p.dial = func(ctx context.Context, network, a string) (net.Conn, error) {
			allow.mu.Lock()
			delete(allow.hosts, "late.test")
			allow.mu.Unlock()
			if n := p.Recheck(); n != 0 {
				t.Errorf("Recheck closed %d tunnels; none was registered yet", n)
			}
			return realDial(ctx, network, a)
		}
	})
	r := rawConnect(t, addr, hostPort("late.test", echo.port()))
	if r.status == 200 {
		t.Fatal("a tunnel judged before a reload and dialled after it stayed open to the removed host")
	}
	if got := p.Stats().ActiveTunnels; got != 0 {
		t.Errorf("active tunnels %d, want 0", got)
	}
}
