package cdpguard

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/selfaddr"
)

// TestIsSelfHost: with the endpoint on 0.0.0.0, a URL naming any host
// address on its port is the guard (IP literal, --host-map name,
// localhost), and agents' URL checks refuse it even though the policy
// allows the address; another port, and a name that only DNS knows, are
// not decided here.
func TestIsSelfHost(t *testing.T) {
	g := testGuard(t, Config{
		Allow:   []string{"10.77.0.5", "guardhost.test", "localhost", "allowed.test"},
		HostMap: []string{"guardhost.test=10.77.0.5"},
	})
	g.ep.self = selfaddr.NewWithLocal(func() ([]selfaddr.Local, error) {
		return []selfaddr.Local{
			{Prefix: netip.MustParsePrefix("127.0.0.1/8"), Loopback: true},
			{Prefix: netip.MustParsePrefix("10.77.0.5/32"), Loopback: true},
		}, nil
	})
	g.ep.self.Add(netip.MustParseAddrPort("0.0.0.0:9222"))
	for _, tc := range []struct {
		url  string
		self bool
	}{
		{"http://10.77.0.5:9222/json/version", true},
		{"http://guardhost.test:9222/policy", true},
		{"http://localhost:9222/metrics", true},
		{"ws://10.77.0.5:9222/devtools/browser/x", true},
		{"http://10.77.0.5:9223/", false},
		{"http://allowed.test:9222/", false}, // resolved by DNS: the egress proxy's check
	} {
		d := g.decideFor(nil, tc.url)
		if got := !d.Allowed && d.Reason == fetchdomain.ReasonSelf; got != tc.self {
			t.Errorf("%s: decision %+v, want self=%v", tc.url, d, tc.self)
		}
		if got := g.readRefusal("", nil, tc.url) != ""; got != tc.self {
			t.Errorf("%s: read refusal %q, want refused=%v", tc.url, g.readRefusal("", nil, tc.url), tc.self)
		}
	}
}

// TestStateChangingEndpointsTakePUT: /json/new, /json/close/<id> and
// /json/activate/<id> answer 405 to GET, HEAD and POST (a page's iframe,
// img or no-cors fetch is a GET without Origin), naming PUT.
func TestStateChangingEndpointsTakePUT(t *testing.T) {
	g := testGuard(t, Config{})
	for _, path := range []string{"/json/new?http://allowed.test/", "/json/close/T1", "/json/activate/T1"} {
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost} {
			w := httptest.NewRecorder()
			g.ServeHTTP(w, httptest.NewRequest(m, "http://127.0.0.1:9222"+path, nil))
			if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != http.MethodPut {
				t.Errorf("%s %s: %d %q, want 405 with Allow: PUT", m, path, w.Code, w.Body.String())
			}
		}
		if strings.HasPrefix(path, "/json/new") {
			continue
		}
		w := httptest.NewRecorder()
		g.ServeHTTP(w, httptest.NewRequest(http.MethodPut, "http://127.0.0.1:9222"+path, nil))
		if w.Code != http.StatusNotFound {
			t.Errorf("PUT %s: %d %q, want 404 (no such target for this user)", path, w.Code, w.Body.String())
		}
	}
}
