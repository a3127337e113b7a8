package selfaddr

import (
	"errors"
	"net/netip"
	"testing"
)

func fakeLocal() ([]Local, error) {
	return []Local{
		{Prefix: netip.MustParsePrefix("127.0.0.1/8"), Loopback: true},
		{Prefix: netip.MustParsePrefix("10.77.0.5/32"), Loopback: true},
		{Prefix: netip.MustParsePrefix("::1/128"), Loopback: true},
		{Prefix: netip.MustParsePrefix("192.168.1.20/24")},
		{Prefix: netip.MustParsePrefix("2001:db8::20/64")},
		{Prefix: netip.MustParsePrefix("fe80::1/64")},
	}, nil
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func TestContainsUnspecifiedListener(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:9222", "[::]:9222", "[::ffff:0.0.0.0]:9222"} {
		s := NewWithLocal(fakeLocal)
		s.Add(ap(listen))
		for _, tc := range []struct {
			dst  string
			self bool
		}{
			{"127.0.0.1:9222", true},
			{"127.3.4.5:9222", true}, // 127/8 is all local on lo
			{"10.77.0.5:9222", true}, // an address added to lo
			{"[::1]:9222", true},
			{"192.168.1.20:9222", true}, // a non-loopback interface's own address
			{"[::ffff:192.168.1.20]:9222", true},
			{"[2001:db8::20]:9222", true},
			{"[fe80::1]:9222", true},
			{"0.0.0.0:9222", true},
			{"[::]:9222", true},
			{"192.168.1.21:9222", false}, // a neighbour on the subnet, not us
			{"[2001:db8::21]:9222", false},
			{"10.77.0.6:9222", false}, // outside the /32 on lo
			{"93.184.216.34:9222", false},
			{"192.168.1.20:9223", false}, // another port
			{"127.0.0.1:80", false},
		} {
			if got := s.Contains(ap(tc.dst)); got != tc.self {
				t.Errorf("listen %s: Contains(%s) = %v, want %v", listen, tc.dst, got, tc.self)
			}
		}
	}
}

func TestContainsSpecificListener(t *testing.T) {
	s := NewWithLocal(fakeLocal)
	s.Add(ap("127.0.0.1:9444"))
	s.Add(ap("192.168.1.20:9222"))
	for _, tc := range []struct {
		dst  string
		self bool
	}{
		{"127.0.0.1:9444", true},
		{"[::ffff:127.0.0.1]:9444", true},
		{"0.0.0.0:9444", true},
		{"127.0.0.2:9444", false}, // a listener on 127.0.0.1 does not accept on .2
		{"192.168.1.20:9444", false},
		{"192.168.1.20:9222", true},
		{"127.0.0.1:9222", false},
	} {
		if got := s.Contains(ap(tc.dst)); got != tc.self {
			t.Errorf("Contains(%s) = %v, want %v", tc.dst, got, tc.self)
		}
	}
}

func TestRemove(t *testing.T) {
	s := NewWithLocal(fakeLocal)
	s.Add(ap("127.0.0.1:9444"))
	s.Add(ap("127.0.0.1:9444"))
	s.Remove(ap("127.0.0.1:9444"))
	if !s.Contains(ap("127.0.0.1:9444")) {
		t.Fatal("one of two listeners removed: still self")
	}
	if !s.HasPort(9444) || s.HasPort(9445) {
		t.Fatal("HasPort")
	}
	s.Remove(ap("127.0.0.1:9444"))
	if s.Contains(ap("127.0.0.1:9444")) || s.HasPort(9444) {
		t.Fatal("both removed: not self")
	}
}

// TestContainsFailsClosed: when the interfaces cannot be listed, every
// address on a wildcard listener's port counts as the guard.
func TestContainsFailsClosed(t *testing.T) {
	s := NewWithLocal(func() ([]Local, error) { return nil, errors.New("no netlink") })
	s.Add(ap("0.0.0.0:9222"))
	if !s.Contains(ap("203.0.113.9:9222")) {
		t.Fatal("interface listing failed: want self")
	}
	if s.Contains(ap("203.0.113.9:80")) {
		t.Fatal("another port: want not self")
	}
}

// TestRealInterfaces checks the operating system's list: every address of
// every interface is self for a wildcard listener.
func TestRealInterfaces(t *testing.T) {
	local, err := interfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	s := New()
	s.Add(ap("0.0.0.0:9222"))
	for _, l := range local {
		a := l.Prefix.Addr()
		if !s.Contains(netip.AddrPortFrom(a, 9222)) {
			t.Errorf("interface address %v not self", a)
		}
	}
	if !s.Contains(ap("127.0.0.1:9222")) {
		t.Error("loopback not self")
	}
}

func TestURLPort(t *testing.T) {
	for _, tc := range []struct {
		url  string
		port int
		ok   bool
	}{
		{"http://10.0.0.1:9222/json/list", 9222, true},
		{"http://10.0.0.1/json/list", 80, true},
		{"https://example.com/", 443, true},
		{"wss://example.com:8443/x", 8443, true},
		{"ws://[::1]:9222/devtools", 9222, true},
		{"http://[::1]/x", 80, true},
		{"HTTP://A:B@10.0.0.1:9222/x", 9222, true},
		{"http://u:p@10.0.0.1/x", 80, true},
		{"http://10.0.0.1:9222?x=:1", 9222, true},
		{"http://10.0.0.1:9222#:1", 9222, true},
		{"http://10.0.0.1:9222\\json", 9222, true},
		{"http://10.0.0.1:/x", 80, true},
		{"http://10.0.0.1:+80/", 0, false},
		{"http://10.0.0.1:99999/", 0, false},
		{"data:text/plain,x", 0, false},
		{"ftp://x:21/", 0, false},
		{"nonsense", 0, false},
	} {
		p, ok := URLPort(tc.url)
		if p != tc.port || ok != tc.ok {
			t.Errorf("URLPort(%q) = %d, %v; want %d, %v", tc.url, p, ok, tc.port, tc.ok)
		}
	}
}
