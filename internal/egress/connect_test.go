package egress

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestConnectAllowedReachesListener(t *testing.T) {
	echo := startEcho(t)
	res := newResolver()
	p, addr := startProxy(t, Options{Decide: newAllow("allowed.test").decide, HostMap: testMap(t), Resolver: res})

	r := rawConnect(t, addr, hostPort("allowed.test", echo.port()))
	if r.status != 200 {
		t.Fatalf("status %d body %q", r.status, r.body)
	}
	echoThrough(t, r, "hello through the tunnel")
	if got := echo.hits.Load(); got != 1 {
		t.Errorf("listener hits = %d, want 1", got)
	}
	if n := res.count("allowed.test"); n != 0 {
		t.Errorf("resolver asked %d times for a host-mapped name", n)
	}
	st := p.Stats()
	if st.Allowed != 1 || st.Refused != 0 || st.ActiveTunnels != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestConnectForbiddenHost(t *testing.T) {
	evil := startEcho(t)
	var mu sync.Mutex
	var refusals []Refusal
	p, addr := startProxy(t, Options{
		Decide:  newAllow("allowed.test").decide,
		HostMap: testMap(t),
		OnRefuse: func(r Refusal) {
			mu.Lock()
			refusals = append(refusals, r)
			mu.Unlock()
		},
	})
	r := rawConnect(t, addr, hostPort("evil.test", evil.port()))
	if r.status != 403 {
		t.Fatalf("status %d, want 403", r.status)
	}
	if !strings.Contains(r.body, "evil.test") || !strings.Contains(r.body, "not on the allowlist") {
		t.Errorf("body %q does not name host and reason", r.body)
	}
	if strings.Contains(r.body, "127.0.0.1") {
		t.Errorf("body %q leaks the address", r.body)
	}
	if got := evil.hits.Load(); got != 0 {
		t.Errorf("forbidden listener hits = %d, want 0", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(refusals) != 1 || refusals[0].Host != "evil.test" || refusals[0].Port != evil.port() || refusals[0].Method != "CONNECT" {
		t.Errorf("refusals = %+v", refusals)
	}
	if st := p.Stats(); st.Refused != 1 || st.Allowed != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestNilDecideDeniesAll(t *testing.T) {
	echo := startEcho(t)
	_, addr := startProxy(t, Options{HostMap: testMap(t)})
	if r := rawConnect(t, addr, hostPort("allowed.test", echo.port())); r.status != 403 {
		t.Fatalf("status %d, want 403", r.status)
	}
	if echo.hits.Load() != 0 {
		t.Error("listener was reached with no policy")
	}
}

func TestResolvedNonPublicAddressRefused(t *testing.T) {
	for _, a := range []string{
		"127.0.0.1", "10.0.0.1", "172.16.3.4", "192.168.1.1", "169.254.169.254",
		"100.64.1.1", "0.0.0.0", "224.0.0.1", "::1", "fd00:ec2::254", "fe80::1",
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a00:1",
	} {
		t.Run(a, func(t *testing.T) {
			res := newResolver()
			res.set("site.example", a)
			p, err := New(Options{Decide: newAllow("site.example").decide, Resolver: res})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			ck, v := p.judge(context.Background(), "CONNECT", target{host: "site.example", port: 443})
			if v == nil || v.status != 403 {
				t.Fatalf("%s: not refused (checked %+v)", a, ck)
			}
			if !strings.HasPrefix(v.refusal.Reason, "name resolves to a ") {
				t.Errorf("reason %q", v.refusal.Reason)
			}
			if v.refusal.Addr != netip.MustParseAddr(a).Unmap() {
				t.Errorf("refusal addr %v", v.refusal.Addr)
			}
		})
	}
}

func TestAllowPrivateCoversResolvedAddress(t *testing.T) {
	res := newResolver()
	res.set("intranet.example", "10.0.0.1")
	res.set("metadata.example", "169.254.169.254")
	p, err := New(Options{
		Decide:       newAllow("intranet.example", "metadata.example").decide,
		Resolver:     res,
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ck, v := p.judge(context.Background(), "CONNECT", target{host: "intranet.example", port: 443})
	if v != nil || len(ck.addrs) != 1 || ck.addrs[0] != netip.MustParseAddrPort("10.0.0.1:443") {
		t.Fatalf("intranet: checked %+v verdict %+v", ck, v)
	}
	if _, v := p.judge(context.Background(), "CONNECT", target{host: "metadata.example", port: 80}); v == nil {
		t.Fatal("metadata address allowed although not covered")
	}
}

func TestResolvedLoopbackEndToEnd(t *testing.T) {
	echo := startEcho(t)
	res := newResolver()
	res.set("site.example", "127.0.0.1")
	opts := Options{Decide: newAllow("site.example").decide, Resolver: res}
	_, addr := startProxy(t, opts)
	if r := rawConnect(t, addr, hostPort("site.example", echo.port())); r.status != 403 {
		t.Fatalf("status %d, want 403", r.status)
	}
	if echo.hits.Load() != 0 {
		t.Fatal("loopback listener reached")
	}
	opts.AllowPrivate = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	_, addr2 := startProxy(t, opts)
	r := rawConnect(t, addr2, hostPort("site.example", echo.port()))
	if r.status != 200 {
		t.Fatalf("with AllowPrivate: status %d %q", r.status, r.body)
	}
	echoThrough(t, r, "x")
}

func TestIPLiteral(t *testing.T) {
	echo := startEcho(t)
	decide := newAllow("127.0.0.1", "::1").decide
	_, plain := startProxy(t, Options{Decide: decide})
	for _, host := range []string{"127.0.0.1", "[::ffff:127.0.0.1]", "[::1]"} {
		if r := rawConnect(t, plain, host+":"+itoa(echo.port())); r.status != 403 {
			t.Errorf("%s: status %d, want 403", host, r.status)
		}
	}
	if echo.hits.Load() != 0 {
		t.Fatal("loopback literal reached")
	}
	lo := netip.MustParseAddr("127.0.0.1")
	_, viaAddrs := startProxy(t, Options{Decide: decide, AllowAddrs: func(a netip.Addr) bool { return a == lo }})
	r := rawConnect(t, viaAddrs, hostPort("127.0.0.1", echo.port()))
	if r.status != 200 {
		t.Fatalf("AllowAddrs: status %d %q", r.status, r.body)
	}
	echoThrough(t, r, "a")
	// The mapped spelling is the same address, judged as 127.0.0.1.
	r = rawConnect(t, viaAddrs, "[::ffff:127.0.0.1]:"+itoa(echo.port()))
	if r.status != 200 {
		t.Fatalf("mapped literal: status %d %q", r.status, r.body)
	}
	echoThrough(t, r, "b")
	_, viaPrefix := startProxy(t, Options{Decide: decide, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	r = rawConnect(t, viaPrefix, hostPort("127.0.0.1", echo.port()))
	if r.status != 200 {
		t.Fatalf("AllowPrivate: status %d %q", r.status, r.body)
	}
	echoThrough(t, r, "c")
}

func TestDNSRebindingResolvesOnceDialsChecked(t *testing.T) {
	echo := startEcho(t)
	res := newResolver()
	// Public first, loopback afterwards: a rebinding attacker's answers.
	res.set("rebind.example", "203.0.113.7", "127.0.0.1")
	var mu sync.Mutex
	var dials []string
	_, addr := startProxy(t, Options{Decide: newAllow("rebind.example").decide, Resolver: res},
		func(p *Proxy) {
			p.dial = func(ctx context.Context, network, a string) (net.Conn, error) {
				mu.Lock()
				dials = append(dials, a)
				mu.Unlock()
				// Play the public host: connect to the echo listener.
				var d net.Dialer
				return d.DialContext(ctx, network, hostPort("127.0.0.1", echo.port()))
			}
		})
	r := rawConnect(t, addr, hostPort("rebind.example", echo.port()))
	if r.status != 200 {
		t.Fatalf("status %d %q", r.status, r.body)
	}
	echoThrough(t, r, "ok")
	if n := res.count("rebind.example"); n != 1 {
		t.Errorf("resolver asked %d times, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	want := hostPort("203.0.113.7", echo.port())
	if len(dials) != 1 || dials[0] != want {
		t.Errorf("dials = %v, want [%s]", dials, want)
	}
}

func TestHostNormalisation(t *testing.T) {
	echo := startEcho(t)
	allow := newAllow("allowed.test")
	_, addr := startProxy(t, Options{Decide: allow.decide, HostMap: testMap(t)})
	for _, h := range []string{"ALLOWED.TEST", "allowed.test.", "Allowed.Test."} {
		r := rawConnect(t, addr, hostPort(h, echo.port()))
		if r.status != 200 {
			t.Fatalf("%s: status %d %q", h, r.status, r.body)
		}
		echoThrough(t, r, h)
	}
	for _, h := range []string{"EVIL.TEST", "evil.test.", "evil.test.."} {
		if r := rawConnect(t, addr, hostPort(h, echo.port())); r.status != 403 {
			t.Errorf("%s: status %d, want 403", h, r.status)
		}
	}
	for _, c := range allow.Calls() {
		if c != hostPort("allowed.test", echo.port()) && c != hostPort("evil.test", echo.port()) {
			t.Errorf("policy saw un-normalised host %q", c)
		}
	}
}

func TestConnectMalformedTargets(t *testing.T) {
	_, addr := startProxy(t, Options{Decide: func(string, int) (bool, string) { return true, "" }, HostMap: testMap(t)})
	for _, tgt := range []string{"allowed.test", "allowed.test:0", "allowed.test:99999", "a_b$.test:443", "127.1:80", "0x7f.1:80", "2130706433:80", "[fe80::1%25lo]:80"} {
		if r := rawConnect(t, addr, tgt); r.status != 403 && r.status != 400 {
			t.Errorf("%s: status %d, want refusal", tgt, r.status)
		}
	}
}

func TestSelfConnectRefused(t *testing.T) {
	var addr string
	_, addr = startProxy(t, Options{
		Decide:       func(string, int) (bool, string) { return true, "" },
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	})
	r := rawConnect(t, addr, addr)
	if r.status != 403 || !strings.Contains(r.body, "proxy itself") {
		t.Fatalf("status %d %q", r.status, r.body)
	}
}

func TestCloseEndsOpenTunnel(t *testing.T) {
	echo := startEcho(t)
	p, err := New(Options{Decide: newAllow("allowed.test").decide, HostMap: testMap(t)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(l) }()
	r := rawConnect(t, l.Addr().String(), hostPort("allowed.test", echo.port()))
	if r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	echoThrough(t, r, "before close")
	if got := p.Stats().ActiveTunnels; got != 1 {
		t.Fatalf("active tunnels %d, want 1", got)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(waitBound):
		t.Fatal("Serve did not return")
	}
	_ = r.conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = r.br.ReadByte()
	if err == nil || !isEOFish(err) {
		t.Fatalf("tunnel still open after Close: read err %v", err)
	}
	if got := p.Stats().ActiveTunnels; got != 0 {
		t.Errorf("active tunnels after close %d", got)
	}
	if c, err := net.DialTimeout("tcp", l.Addr().String(), time.Second); err == nil {
		_ = c.Close()
		t.Error("proxy still accepts after Close")
	}
}

func TestDialFailureAnswers502WithoutAddress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close() // nothing listens there now
	_, addr := startProxy(t, Options{Decide: newAllow("allowed.test").decide, HostMap: testMap(t)})
	r := rawConnect(t, addr, hostPort("allowed.test", port))
	if r.status != 502 || !strings.Contains(r.body, "allowed.test") || strings.Contains(r.body, "127.0.0.1") {
		t.Fatalf("CONNECT: %d %q", r.status, r.body)
	}
	code, body := get(t, proxyClient(t, addr), "http://allowed.test:"+itoa(port)+"/", nil)
	if code != 502 || strings.Contains(body, "127.0.0.1") {
		t.Fatalf("GET: %d %q", code, body)
	}
}

func TestUnresolvableName(t *testing.T) {
	_, addr := startProxy(t, Options{Decide: newAllow("nowhere.example").decide, Resolver: newResolver()})
	if r := rawConnect(t, addr, "nowhere.example:443"); r.status != 502 {
		t.Fatalf("status %d %q", r.status, r.body)
	}
}
