package cdpguard

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestCloseEndsUserListeners: a guard closed while users' own egress proxy
// listeners are open ends cleanly (Close waits for their goroutines and
// returns), the listeners no longer accept, and no user scope can be
// opened afterwards. No browser is needed: the proxy is the guard's own.
func TestCloseEndsUserListeners(t *testing.T) {
	g, err := newGuard(Config{Allow: []string{"allowed.test"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.startProxy(); err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, key := range []string{"alice", "bob"} {
		sc, err := g.scopes.Open(key)
		if err != nil {
			t.Fatal(err)
		}
		g.scopes.Bind("CTX-"+key, sc)
		addrs = append(addrs, strings.TrimPrefix(sc.ProxyURL(), "http://"))
	}
	for _, a := range addrs {
		c, err := net.DialTimeout("tcp", a, 5*time.Second)
		if err != nil {
			t.Fatalf("user listener %s before Close: %v", a, err)
		}
		defer c.Close() // an open client connection must not hold Close up
	}
	closed := make(chan error, 1)
	go func() { closed <- g.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close with users' proxy listeners open did not return within 10s")
	}
	for _, a := range addrs {
		if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			c.Close()
			t.Errorf("user listener %s still accepts after Close", a)
		}
	}
	if _, err := g.scopes.Open("carol"); err == nil {
		t.Error("a user scope was opened after Close")
	}
}
