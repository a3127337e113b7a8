package e2e

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// sideWebRTC: ICE gathering against a STUN server on the forbidden host, by
// name and by IP literal. The guard's Chrome runs with
// --force-webrtc-ip-handling-policy=disable_non_proxied_udp, so no UDP may
// leave at all; the control is the same page in an unguarded Chromium,
// whose STUN packets reach the UDP listener.
func sideWebRTC(t *testing.T, h *testhosts.Hosts, sum *sideSummary, block, unguarded *sideEnv) {
	tunErr := addTunLink(t)
	stun := testhosts.StartUDP(t, "127.0.0.1:0")
	port := strconv.Itoa(stun.Addr.Port)
	for _, s := range []struct{ name, url string }{
		{"webrtc-stun-by-name", "stun:" + testhosts.ForbiddenName + ":" + port},
		{"webrtc-stun-ip-literal", "stun:127.0.0.1:" + port},
	} {
		rec := sum.vector(s.name)
		v := sideVector{name: s.name, page: "webrtc", query: url.Values{"stun": {s.url}}, ownTab: true}
		t.Run(s.name, func(t *testing.T) {
			rec.ran = true
			if tunErr != "" {
				rec.skipped = true
				t.Skipf("skipping: WebRTC needs a non-loopback link and none could be added: %s", tunErr)
			}
			t.Run("control", func(t *testing.T) {
				before := stun.Packets()
				tab, _ := openSide(t, h, unguarded, v, "", s.name+"-control")
				if !waitFor(6*time.Second, func() bool { return stun.Packets() > before }) {
					rec.controlBad = true
					note, _ := evalString(tab, `String(window.__vectorNote)`)
					t.Errorf("control (unguarded): no STUN packet reached %s within 6s (page: %s): the vector does not work, so its leak test proves nothing", s.url, note)
				}
			})
			t.Run("forbidden", func(t *testing.T) {
				before := stun.Packets()
				tab, _ := openSide(t, h, block, v, "", s.name+"-forbidden")
				if err := pollTrue(tab, 6*time.Second, `window.__vectorDone === true`); err != nil {
					t.Logf("vector did not signal done (checking anyway): %v", err)
				}
				time.Sleep(500 * time.Millisecond)
				note, _ := evalString(tab, `String(window.__vectorNote)`)
				t.Logf("guarded ICE gathering: %s", note)
				if n := stun.Packets() - before; n > 0 {
					rec.leak = true
					t.Errorf("LEAK via %s (block): the STUN listener got %d UDP packet(s) from %v; page: %s", s.name, n, stun.From(), note)
				}
			})
		})
	}
}

// sideDNSPrefetch: <link rel=dns-prefetch>. The guard's Chrome resolves no
// name itself (--host-resolver-rules=MAP * ~NOTFOUND), so the listener is
// a fake DNS server on the system resolver's address; the control is the
// same page in an unguarded Chromium, whose lookup reaches it.
func sideDNSPrefetch(t *testing.T, h *testhosts.Hosts, sum *sideSummary, block, unguarded *sideEnv) {
	const name = "link-dns-prefetch"
	rec := sum.vector(name)
	t.Run(name, func(t *testing.T) {
		rec.ran = true
		dns, why := startFakeDNS(t)
		if dns == nil {
			rec.skipped = true
			t.Skipf("skipping: no fake DNS server: %s", why)
		}
		v := sideVector{name: name, page: "link", query: url.Values{"rel": {"dns-prefetch"}}}
		t.Run("control", func(t *testing.T) {
			const host = "dnsprefetch-control.example"
			openSide(t, h, unguarded, v, "http://"+host, name+"-control")
			if !waitFor(6*time.Second, func() bool { return dns.Queries(host) > 0 }) {
				rec.controlBad = true
				t.Errorf("control (unguarded): no DNS query for %s reached %s within 6s: the vector does not work", host, dns.Addr)
			}
		})
		t.Run("forbidden", func(t *testing.T) {
			for _, host := range []string{"dnsprefetch-evil.example", testhosts.AllowedName} {
				tab, _ := openSide(t, h, block, v, "http://"+host, name+"-forbidden")
				if err := pollTrue(tab, 6*time.Second, `window.__vectorDone === true`); err != nil {
					t.Logf("vector did not signal done (checking anyway): %v", err)
				}
				time.Sleep(700 * time.Millisecond)
				if n := dns.Queries(host); n > 0 {
					rec.leak = true
					t.Errorf("LEAK via %s (block): the DNS listener got %d quer(ies) for %s", name, n, host)
				}
			}
		})
	})
}

// startFakeDNS listens on port 53 of the first nameserver of
// /etc/resolv.conf. When that address is not local and the test runs in a
// private network namespace (only "lo"), it adds the address to lo first.
func startFakeDNS(t *testing.T) (*testhosts.UDPCounter, string) {
	b, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return nil, err.Error()
	}
	var ns string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "nameserver" && net.ParseIP(f[1]).To4() != nil {
			ns = f[1]
			break
		}
	}
	if ns == "" {
		return nil, "no IPv4 nameserver in /etc/resolv.conf"
	}
	addr := net.JoinHostPort(ns, "53")
	if c, err := net.ListenPacket("udp", addr); err == nil {
		_ = c.Close()
		return testhosts.StartUDP(t, addr), ""
	}
	if !privateNetns() {
		return nil, "cannot bind " + addr + " and not in a private network namespace (only lo)"
	}
	if out, err := exec.Command("ip", "addr", "add", ns+"/32", "dev", "lo").CombinedOutput(); err != nil {
		return nil, "ip addr add " + ns + ": " + err.Error() + " " + string(out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "addr", "del", ns+"/32", "dev", "lo").Run() })
	return testhosts.StartUDP(t, addr), ""
}

// sideSIGKILL runs `cdpguard serve`, opens a page that polls the forbidden
// host and the sink with fetch and WebSocket every 100 ms, and SIGKILLs
// cdpguard: the forbidden listener must see nothing before or after, and
// the sink must stop hearing from the browser (it died with its guard and
// the dead guard's proxy refuses).
func sideSIGKILL(t *testing.T, h *testhosts.Hosts, rec *sideResult) {
	chrome := needBrowser(t)
	cmd := exec.Command(buildCdpguard(t, t.TempDir()), serveArgs(chrome)...)
	srv := startServed(t, cmd)
	waited, out := srv.waited, srv.out
	base := srv.listenURL(t)
	cdptest.WaitHTTP(t, base+"/readyz", "ok", 30*time.Second)

	const name = "sigkill-poll"
	before := h.Forbidden.Snapshot()
	tab := newTab(t, connect(t, base))
	u := h.VectorURL("pollws", h.Forbidden.Origin(), name) + "&" + url.Values{"sink": {h.Sink.Origin()}}.Encode()
	if errText, err := navigateNoWait(tab, u); err != nil || errText != "" {
		t.Fatalf("navigate to %s: errorText=%q err=%v", u, errText, err)
	}
	ctl := testhosts.HitPath(name + "-control")
	if !waitFor(10*time.Second, func() bool { return h.Sink.Hits(ctl) >= 3 && h.Sink.Hits(ctl+"-ws") >= 3 }) {
		rec.controlBad = true
		t.Errorf("control: the page did not reach the sink with fetch and WebSocket (fetch %d, ws %d hits in 10s)", h.Sink.Hits(ctl), h.Sink.Hits(ctl+"-ws"))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL: %v", err)
	}
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("killed cdpguard not reaped within 5s")
	}
	time.Sleep(700 * time.Millisecond) // requests in flight at the kill may land
	settled := h.Sink.Snapshot()
	time.Sleep(1500 * time.Millisecond)
	if s := h.Sink.Snapshot(); s != settled {
		t.Errorf("the browser kept reaching the sink after its guard was killed: %d requests, %d connections in 1.5s", s.Total-settled.Total, s.Conns-settled.Conns)
	}
	if s := h.Forbidden.Snapshot(); s.Total != before.Total || s.Conns != before.Conns {
		rec.leak = true
		t.Errorf("LEAK via sigkill-while-polling: the forbidden host got %d request(s) and %d connection(s): %v\nguard output:\n%s",
			s.Total-before.Total, s.Conns-before.Conns, h.Forbidden.Log(), out)
	}
}

// waitFor polls cond every 20 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// evalString evaluates expr in tab, bounded by 5 s.
func evalString(tab context.Context, expr string) (string, error) {
	return step(tab, 5*time.Second, chromedp.Evaluate[string](expr))
}
