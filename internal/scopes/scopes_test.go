package scopes

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/egress"
	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/users"
)

// fakeUsers places targets: target → {key, primary, context}.
type fakeUsers map[string][3]string

func (f fakeUsers) PrimaryOf(target string) (string, string, bool) {
	t, ok := f[target]
	if !ok || t[0] == "" {
		return "", "", false
	}
	return t[0], t[1], true
}

func (f fakeUsers) ContextOf(target string) (string, bool) {
	t, ok := f[target]
	return t[2], ok
}

// fakePages places subframes (frame → page) and targets in the contexts
// of its fakeUsers.
type fakePages struct {
	fakeUsers
	frames map[string]string
}

func (f fakePages) PageOf(frame string) string { return f.frames[frame] }

type fakeBrowser string

func (f fakeBrowser) Call(context.Context, string, string, any) (jsonv2.Value, error) {
	if f == "" {
		return nil, errors.New("no browser")
	}
	return jsonv2.Value(`{"defaultBrowserContextId":"` + f + `","browserContextIds":[]}`), nil
}

func testPolicy(t *testing.T) onePolicy {
	t.Helper()
	p, err := policy.Parse([]string{"allowed.test"}, []string{"*.blocked.test"})
	if err != nil {
		t.Fatal(err)
	}
	return onePolicy{p}
}

// onePolicy is every user's policy; it allows no IP entries.
type onePolicy struct{ p *policy.Policy }

func (o onePolicy) PolicyOf(string) *policy.Policy          { return o.p }
func (o onePolicy) AllowAddrs(string) func(netip.Addr) bool { return nil }

// goFunc is a test's Life.
type goFunc func(f func()) bool

func (g goFunc) GoOwned(f func()) bool { return g(f) }

// count is a test's Counter.
type count int

func (c *count) Inc() { *c++ }

// TestGrantScopes: Grant refuses bad hosts and unknown targets before
// touching any scope; a bound scope's grants decide for its user only; a
// scope whose session ended refuses grants and grants nothing.
func TestGrantScopes(t *testing.T) {
	var granted count
	tb := New(Deps{
		Users:   fakeUsers{"T1": {"u", "CTX", "CTX"}, "T2": {"v", "OTHER", "OTHER"}},
		Policy:  testPolicy(t),
		Granted: &granted,
	})
	for _, host := range []string{"", "10.0.0.1", "x.blocked.test", "*.a.test"} {
		if _, err := tb.Grant("T1", host, "test"); err == nil {
			t.Errorf("grant of %q accepted", host)
		}
	}
	if _, err := tb.Grant("T1", "a.test", "test"); err == nil {
		t.Error("grant on a target whose user has no scope accepted")
	}
	// What the controls ask before drawing the allow button.
	for host, want := range map[string]bool{"a.test": true, "10.0.0.1": false, "x.blocked.test": false, "intranet": false} {
		if _, err := tb.Grantable("", host); (err == nil) != want {
			t.Errorf("Grantable(%q) = %v, want grantable %v", host, err, want)
		}
	}
	sc, err := tb.Open("u") // no proxy: no listener
	if err != nil || sc.ln != nil || sc.ProxyURL() != "" {
		t.Fatalf("Open without a proxy: %+v %v", sc, err)
	}
	tb.Bind("CTX", sc)
	u := &users.User{Key: "u", Primary: "CTX"}
	if tb.OfUser(u) != sc || tb.OfTarget("T1") != sc || tb.OfUser(&users.User{Key: "u"}) != nil {
		t.Fatal("OfUser or OfTarget does not find the bound scope")
	}
	if key, err := tb.Grant("T1", "A.Test.", "controls"); err != nil || key != "u" || granted != 1 {
		t.Fatalf("Grant = %q, %v (%d counted)", key, err, granted)
	}
	if _, err := tb.Grant("T1", "a.test", "controls"); err != nil || granted != 1 {
		t.Errorf("a second grant of the same host: %v, counted %d times", err, granted)
	}
	pol := testPolicy(t).PolicyOf("u")
	if d := tb.OfUser(u).Grants().Decide(pol.Decide("https://a.test/")); !d.Allowed {
		t.Errorf("the user's grant does not decide: %+v", d)
	}
	if d := tb.OfTarget("T2").Grants().Decide(pol.Decide("https://a.test/")); d.Allowed {
		t.Errorf("another user got u's grant: %+v", d)
	}
	if got := tb.Hosts("T1"); len(got) != 1 || got[0] != "a.test" {
		t.Errorf("Hosts(T1) = %v", got)
	}
	if got := sc.List(); len(got) != 1 || got[0].Host != "a.test" || got[0].Via != "controls" {
		t.Errorf("List = %+v", got)
	}
	tb.End("CTX")
	if tb.OfUser(u) != nil || tb.Hosts("T1") != nil {
		t.Error("the scope outlived its session")
	}
	if _, err := sc.Grants().Add("b.test", "test", time.Now()); err == nil {
		t.Error("a grant was added to an ended session")
	}
	if d := sc.Grants().Decide(pol.Decide("https://a.test/")); d.Allowed {
		t.Errorf("an ended session's grant still applies: %+v", d)
	}
	var none *Scope
	if got := none.List(); got == nil || len(got) != 0 || none.Key() != "" || none.Grants() != nil {
		t.Errorf("a nil scope: list %#v, key %q", got, none.Key())
	}
	var nt *Table
	if _, ok := nt.Owner("T1"); ok || nt.OfTarget("T1") != nil || nt.OfUser(u) != nil {
		t.Error("a nil table found a scope")
	}
}

// TestDefaultContext: once the browser names its default context, its
// targets (and frames of its pages) get the default scope, which is
// nobody's user; until then they get none.
func TestDefaultContext(t *testing.T) {
	us := fakeUsers{"H": {"", "", "DEF"}}
	tb := New(Deps{Users: us, Pages: fakePages{us, map[string]string{"F": "H"}}, Browser: fakeBrowser(""), Policy: testPolicy(t)})
	tb.LearnDefaultContext(context.Background())
	if tb.OfTarget("H") != nil {
		t.Fatal("a default-context target has a scope before the context is known")
	}
	tb.d.Browser = fakeBrowser("DEF")
	tb.LearnDefaultContext(context.Background())
	if tb.OfTarget("H") != tb.Default() || tb.Default().Key() != DefaultKey {
		t.Fatal("the default context's target is not in the default scope")
	}
	if key, err := tb.Grant("H", "d.test", "controls"); err != nil || key != DefaultKey {
		t.Fatalf("grant in the default context: %q %v", key, err)
	}
	if set := tb.ForFrame("F"); set == nil || !set.Has("d.test") {
		t.Error("a subframe of the default context's page does not get its grants")
	}
	if _, ok := tb.Owner("F"); ok {
		t.Error("a default-context frame has an owner")
	}
}

// TestFrames: a subframe is its page's user's (its frames are the page
// registry's, internal/pages); a frame the registry does not place is
// nobody's, and so gets no grants.
func TestFrames(t *testing.T) {
	us := fakeUsers{"T": {"u", "CTX", "CTX"}}
	tb := New(Deps{Users: us, Pages: fakePages{us, map[string]string{"F1": "T", "FX": "X"}}, Policy: testPolicy(t)})
	if key, ok := tb.Owner("F1"); !ok || key != "u" {
		t.Errorf("Owner(F1) = %q, %v", key, ok)
	}
	for _, f := range []string{"F2", "FX"} {
		if key, ok := tb.Owner(f); ok {
			t.Errorf("Owner(%s) = %q, want nobody", f, key)
		}
		if tb.ForFrame(f) != nil {
			t.Errorf("ForFrame(%s) has grants", f)
		}
	}
}

// servingProxy serves every listener it is given with a tiny HTTP server
// that answers 204 when the scope's Decide allows the request's host.
type servingProxy struct{ tags chan any }

func (p servingProxy) ServeScoped(ln net.Listener, s egress.Scope) error {
	p.tags <- s.Tag
	err := http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, _ := s.Decide(r.Host, 443); ok {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.WriteHeader(http.StatusForbidden)
	}))
	if errors.Is(err, net.ErrClosed) {
		return egress.ErrClosed
	}
	return err
}

// TestOpenServes: a user's scope gets its own listener, judged with that
// user's grants and tagged with the scope; End closes it and Open refuses
// once the guard is closing.
func TestOpenServes(t *testing.T) {
	var wg sync.WaitGroup
	closing := false
	p := servingProxy{tags: make(chan any, 1)}
	tb := New(Deps{
		Users:  fakeUsers{"T": {"u", "CTX", "CTX"}},
		Proxy:  func() Proxy { return p },
		Policy: testPolicy(t),
		Life: goFunc(func(f func()) bool {
			if closing {
				return false
			}
			wg.Add(1)
			go func() { defer wg.Done(); f() }()
			return true
		}),
	})
	sc, err := tb.Open("u")
	if err != nil || !strings.HasPrefix(sc.ProxyURL(), "http://127.0.0.1:") {
		t.Fatalf("Open: %v %q", err, sc.ProxyURL())
	}
	tb.Bind("CTX", sc)
	select {
	case tag := <-p.tags:
		if FromTag(tag) != sc || FromTag(nil) != nil || FromTag("x") != nil {
			t.Errorf("the listener's tag %v does not name the scope", tag)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the scope's listener was not served within 5s")
	}
	get := func(host string) int {
		req, _ := http.NewRequest(http.MethodGet, sc.ProxyURL()+"/", nil)
		req.Host = host
		c := http.Client{Timeout: 5 * time.Second}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if get("allowed.test") != http.StatusNoContent || get("g.test") != http.StatusForbidden {
		t.Error("the listener does not judge by the policy")
	}
	if _, err := tb.Grant("T", "g.test", "controls"); err != nil {
		t.Fatal(err)
	}
	if get("g.test") != http.StatusNoContent {
		t.Error("the listener does not judge with the user's grants")
	}
	tb.End("CTX")
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	select { // the listener's goroutine ends with the session
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the ended session's listener was still served after 5s")
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(sc.ProxyURL(), "http://"), time.Second); err == nil {
		c.Close()
		t.Error("the ended session's listener still accepts")
	}
	closing = true
	if _, err := tb.Open("v"); err == nil {
		t.Error("a scope was opened while the guard closes")
	}
}
