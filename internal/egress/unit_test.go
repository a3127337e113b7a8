package egress

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"
)

func TestParseAuthority(t *testing.T) {
	for _, c := range []struct {
		in, host string
		port     int
		def      int
		bad      bool
	}{
		{in: "Example.COM.:443", host: "example.com", port: 443},
		{in: "example.com", def: 80, host: "example.com", port: 80},
		{in: "example.com", bad: true},
		{in: "[::1]:8080", host: "::1", port: 8080},
		{in: "[::1]", def: 80, host: "::1", port: 80},
		{in: "[::FFFF:7F00:1]:1", host: "127.0.0.1", port: 1},
		{in: "1.2.3.4:5", host: "1.2.3.4", port: 5},
		{in: "example.com:+80", bad: true},
		{in: "example.com:0", bad: true},
		{in: "example.com:65536", bad: true},
		{in: ":80", bad: true},
		{in: ".:80", bad: true},
		{in: "a..b:80", bad: true},
		{in: "ex ample.com:80", bad: true},
		{in: "exa%mple.com:80", bad: true},
		{in: "127.1:80", bad: true},
		{in: "0x7f000001:80", bad: true},
		{in: "[fe80::1%eth0]:80", bad: true},
		{in: "1::2::3", def: 80, bad: true},
		{in: "xn--nxasmq6b.example:443", host: "xn--nxasmq6b.example", port: 443},
	} {
		got, why := parseAuthority(c.in, c.def)
		if c.bad {
			if why == "" {
				t.Errorf("%q: accepted as %+v", c.in, got)
			}
			continue
		}
		if why != "" || got.host != c.host || got.port != c.port {
			t.Errorf("%q: got %+v %q, want %s %d", c.in, got, why, c.host, c.port)
		}
	}
}

func TestClassify(t *testing.T) {
	public := []string{"8.8.8.8", "203.0.113.7", "2606:4700::1111", "64:ff9b::808:808", "2002:808:808::1"}
	for _, a := range public {
		if r := classify(netip.MustParseAddr(a)); r != "" {
			t.Errorf("%s classified %q", a, r)
		}
	}
	special := []string{
		"127.0.0.1", "127.255.0.1", "10.1.2.3", "172.31.0.1", "192.168.0.1", "169.254.169.254",
		"100.64.0.1", "100.100.100.200", "0.0.0.0", "0.1.2.3", "224.0.0.251", "255.255.255.255",
		"240.0.0.1", "198.18.0.1", "192.0.0.170", "::", "::1", "fc00::1", "fd00:ec2::254", "fe80::1",
		"ff02::1", "fec0::1", "::127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::1",
	}
	for _, a := range special {
		if r := classify(netip.MustParseAddr(a)); r == "" {
			t.Errorf("%s classified public", a)
		}
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	if _, err := New(Options{DialTimeout: -time.Second}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("negative timeout: %v", err)
	}
	if _, err := New(Options{AllowPrivate: []netip.Prefix{{}}}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("zero prefix: %v", err)
	}
	p, err := New(Options{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")}})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := p.addrPermitted(netip.MustParseAddr("10.9.9.9"), false, nil); !ok {
		t.Error("IPv4-mapped prefix does not cover the IPv4 address")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDialWithoutCheckIsRefused(t *testing.T) {
	p, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.transportDial(t.Context(), "tcp", "example.com:80"); !errors.Is(err, ErrUncheckedDial) {
		t.Errorf("unchecked dial: %v", err)
	}
	ck := &checked{name: "a.test:80", addrs: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:1")}}
	if _, err := p.dialChecked(t.Context(), ck, "b.test:80"); !errors.Is(err, ErrUncheckedDial) {
		t.Errorf("mismatched dial: %v", err)
	}
}

func BenchmarkConnect(b *testing.B) {
	echo := startEcho(b)
	_, addr := startProxy(b, Options{Decide: newAllow("allowed.test").decide, HostMap: testMap(b)})
	target := hostPort("allowed.test", echo.port())
	msg := []byte("0123456789abcdef0123456789abcdef")
	buf := make([]byte, len(msg))
	req := []byte("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
	const okLine = "HTTP/1.1 200 Connection established\r\n\r\n"
	reply := make([]byte, len(okLine))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(waitBound))
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, reply); err != nil || string(reply) != okLine {
			b.Fatalf("reply %q %v", reply, err)
		}
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
	}
}

// TestListenRefusal: the shared listener takes loopback addresses only.
func TestListenRefusal(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:0", "127.0.0.1:8899", "[::1]:8899", "localhost:8899"} {
		if why := ListenRefusal(ok); why != "" {
			t.Errorf("%s: %s", ok, why)
		}
	}
	for _, bad := range []string{"0.0.0.0:8899", ":8899", "[::]:8899", "10.0.0.1:8899", "example.com:8899", "127.0.0.1", "nonsense"} {
		if ListenRefusal(bad) == "" {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestParsePrivate: ranges and addresses, several to a string; the first
// bad entry is named.
func TestParsePrivate(t *testing.T) {
	got, bad := ParsePrivate([]string{"10.0.0.0/8, 192.168.1.5;fd00::/8\n::1"})
	if bad != "" || len(got) != 4 || got[1].Bits() != 32 || got[3].Bits() != 128 {
		t.Fatalf("ParsePrivate = %v, %q", got, bad)
	}
	if _, bad := ParsePrivate([]string{"10.0.0.0/8", "nope"}); bad != "nope" {
		t.Fatalf("bad = %q, want nope", bad)
	}
}
