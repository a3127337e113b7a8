package httpgate

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestHostAllowed(t *testing.T) {
	g := Gate{PublicHosts: []string{"cdpguard.", "Guard.Example"}}
	for host, want := range map[string]bool{
		"127.0.0.1:9222": true, "[::1]:9222": true, "localhost": true, "LOCALHOST.:1": true,
		"cdpguard:9222": true, "guard.example": true, "10.0.0.5": true,
		"evil.example:9222": false, "localhost.evil.test": false, "": false,
	} {
		if got := g.HostAllowed(host); got != want {
			t.Errorf("HostAllowed(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestRefuse: a page's headers, a foreign Host and a connection the egress
// proxy dialled are refused with 403; an agent's request passes.
func TestRefuse(t *testing.T) {
	proxied := netip.MustParseAddrPort("127.0.0.1:5555")
	g := Gate{Dialled: func(peer, _ netip.AddrPort) bool { return peer == proxied }}
	req := func(host string, h map[string]string, remote string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "http://"+host+"/json/version", nil)
		for k, v := range h {
			r.Header.Set(k, v)
		}
		r.RemoteAddr = remote
		return r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9222}))
	}
	for name, c := range map[string]struct {
		r      *http.Request
		refuse bool
	}{
		"agent":        {req("127.0.0.1:9222", nil, "127.0.0.1:4000"), false},
		"typed URL":    {req("127.0.0.1:9222", map[string]string{"Sec-Fetch-Site": "none"}, "127.0.0.1:4000"), false},
		"origin":       {req("127.0.0.1:9222", map[string]string{"Origin": "http://evil.test"}, "127.0.0.1:4000"), true},
		"fetch site":   {req("127.0.0.1:9222", map[string]string{"Sec-Fetch-Site": "cross-site"}, "127.0.0.1:4000"), true},
		"foreign host": {req("evil.test:9222", nil, "127.0.0.1:4000"), true},
		"own proxy":    {req("127.0.0.1:9222", nil, proxied.String()), true},
	} {
		w := httptest.NewRecorder()
		if got := g.Refuse(w, c.r); got != c.refuse || (got && w.Code != http.StatusForbidden) {
			t.Errorf("%s: refused %v (%d), want %v", name, got, w.Code, c.refuse)
		}
	}
}
