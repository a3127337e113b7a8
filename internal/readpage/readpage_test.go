package readpage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"

	"github.com/cdpguard/cdpguard/internal/grants"
	"github.com/cdpguard/cdpguard/internal/pages"
	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/js"
)

const article = `<html><head><title>Pears</title></head><body><main><h1>Pears</h1>` +
	`<p>The pear is a sweet fruit of the temperate regions; its trees flower in spring and bear in autumn, and the fruit ripens off the tree.</p>` +
	`<p>Pears are eaten fresh, canned, or dried, and their wood is prized by makers of instruments and furniture for its fine, even grain.</p></main></body></html>`

// browser is a fake page browser: one page per session, each with a main
// frame whose id is the target id, answering what the reader sends.
type browser struct {
	t *testing.T

	mu      sync.Mutex
	calls   []string
	html    map[string]string // session → the page's HTML
	url     map[string]string // session → the page's URL
	loader  map[string]string // session → the main frame's loader id
	stuck   bool              // navigations never commit (the loader id stays)
	created int               // Target.createTarget count
	r       *Reader           // told of created targets (AwaitSetup)
}

func newBrowser(t *testing.T) *browser {
	return &browser{t: t, html: map[string]string{}, url: map[string]string{}, loader: map[string]string{}}
}

func (b *browser) Call(_ context.Context, session, method string, params any) (jsonv2.Value, error) {
	raw, err := jsonv2.Marshal(params)
	if err != nil {
		return nil, err
	}
	var p map[string]any
	_ = jsonv2.Unmarshal(raw, &p)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, method)
	target := strings.TrimPrefix(session, "S-")
	var out any
	switch method {
	case "Target.getTargetInfo":
		typ := "page"
		if strings.HasPrefix(target, "W") {
			typ = "service_worker"
		}
		out = map[string]any{"targetInfo": map[string]any{"targetId": target, "type": typ}}
	case "Target.createTarget":
		b.created++
		out = map[string]any{"targetId": fmt.Sprintf("N%d", b.created)}
	case "Page.navigate":
		u, _ := p["url"].(string)
		if strings.Contains(u, "unreachable") {
			return jsonv2.Value(`{"frameId":"x","errorText":"net::ERR_NAME_NOT_RESOLVED"}`), nil
		}
		b.url[session], b.html[session] = u, article
		if !b.stuck {
			b.loader[session] = "L-" + u
		}
		out = map[string]any{"frameId": target, "loaderId": "L-" + u}
	case "Page.getFrameTree":
		out = map[string]any{"frameTree": map[string]any{"frame": map[string]any{"id": target, "loaderId": b.loader[session]}}}
	case "Page.createIsolatedWorld":
		if p["worldName"] != "reader-world" || p["frameId"] != target {
			b.t.Errorf("isolated world %v on session %s", p, session)
		}
		out = map[string]any{"executionContextId": 7}
	case "Runtime.evaluate":
		if p["contextId"] != float64(7) || p["returnByValue"] != true {
			b.t.Errorf("evaluate outside the reader's world: %v", p)
		}
		switch p["expression"] {
		case js.ReadyState:
			out = map[string]any{"result": map[string]any{"value": "complete"}}
		default:
			b.t.Errorf("unexpected expression %v", p["expression"])
		}
	case "Runtime.callFunctionOn":
		if p["executionContextId"] != float64(7) || p["returnByValue"] != true {
			b.t.Errorf("a call outside the reader's world: %v", p)
		}
		switch p["functionDeclaration"] {
		case js.Settle:
			out = map[string]any{"result": map[string]any{"value": map[string]any{"state": "complete", "now": 10000, "lastNet": 100, "loaded": 200, "nodes": 9, "text": 300, "chars": 200}}}
		case js.Read:
			out = map[string]any{"result": map[string]any{"value": map[string]any{"url": b.url[session], "title": "Pears", "html": b.html[session]}}}
		default:
			b.t.Errorf("unexpected function %v", p["functionDeclaration"])
		}
	default:
		return nil, fmt.Errorf("unexpected %s", method)
	}
	return jsonv2.Marshal(out)
}

func (b *browser) count(method string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.calls {
		if c == method {
			n++
		}
	}
	return n
}

// fakePolicy allows every host but evil.test, and records whose policy
// was asked for ("user <key>", "page <target>"); users own targets whose
// id is not "X…", and carry at most caps tabs.
type fakePolicy struct {
	mu    sync.Mutex
	asked []string
}

var everyHostButEvil = func() *policy.Policy {
	p, err := policy.Parse([]string{"*"}, []string{"evil.test"})
	if err != nil {
		panic(err)
	}
	return p
}()

func (p *fakePolicy) ask(who string) (*policy.Policy, *grants.Set) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, who)
	return everyHostButEvil, nil
}

func (p *fakePolicy) last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asked[len(p.asked)-1]
}

func (p *fakePolicy) OfUser(key string) (*policy.Policy, *grants.Set) { return p.ask("user " + key) }
func (p *fakePolicy) OfPage(target string) (*policy.Policy, *grants.Set) {
	return p.ask("page " + target)
}
func (p *fakePolicy) Self(d policy.Decision, _ string) policy.Decision { return d }

type users struct {
	full   bool
	held   int
	unheld int
}

type user struct{ us *users }

func (us *users) Hold(_ context.Context, key string) (User, func(), error) {
	if key == "nobody" {
		return nil, nil, errors.New("no such user")
	}
	us.held++
	return user{us}, func() { us.unheld++ }, nil
}

func (u user) Owns(target string) bool { return !strings.HasPrefix(target, "X") }
func (u user) CheckTabs() error {
	if u.us.full {
		return errors.New("the user has 3 tabs (--max-tabs-per-user)")
	}
	return nil
}
func (u user) Context() string { return "CTX" }

type fixture struct {
	b      *browser
	us     *users
	pg     *pages.Registry
	r      *Reader
	pol    *fakePolicy
	worlds []string
}

func newFixture(t *testing.T, d Deps) *fixture {
	f := &fixture{b: newBrowser(t), us: &users{}, pg: pages.New(), pol: &fakePolicy{}}
	d.Browser, d.Policy, d.Users, d.Pages, d.World = f.b, f.pol, f.us, setupPages{f.pg}, "reader-world"
	d.Worlds = f
	if d.SettleTimeout == 0 {
		d.SettleTimeout = -1
	}
	f.r = New(d)
	f.b.r = f.r
	return f
}

// setupPages is the page registry whose setup of a new target attaches
// the guard's session to it at once.
type setupPages struct{ *pages.Registry }

func (p setupPages) AwaitSetup(_ context.Context, target string) error {
	p.Attached(target, "S-"+target) // the guard's setup attached to it
	return nil
}

// MadeIn records the reader's worlds as the guard's would.
func (f *fixture) MadeIn(_ target.ID, frame cdp.FrameID, id runtime.ExecutionContextID) {
	f.worlds = append(f.worlds, fmt.Sprintf("%s/%d", frame, id))
}

func command(t *testing.T, session string, browserLevel bool, params any) relay.Command {
	t.Helper()
	b, err := jsonv2.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	return relay.Command{Method: "Guard.read", Params: b, SessionID: session, Browser: browserLevel}
}

func TestCommand(t *testing.T) {
	f := newFixture(t, Deps{SearchURL: "https://search.test/"})
	owns := func(target string) bool { return target != "T9" }
	f.pg.Attached("T1", "S-T1")
	refused := func(cmd relay.Command, parts ...string) {
		t.Helper()
		v := f.r.Command(t.Context(), cmd, owns)
		if !strings.HasPrefix(v.Refuse, "cdpguard: Guard.read is refused: ") {
			t.Fatalf("%+v: want a refusal", v)
		}
		for _, p := range parts {
			if !strings.Contains(v.Refuse, p) {
				t.Errorf("refusal %q lacks %q", v.Refuse, p)
			}
		}
	}
	refused(command(t, "", true, map[string]any{}), "page session")
	refused(relay.Command{Method: "Guard.read", SessionID: "S-T1", Params: []byte(`{"offset":"x"}`)}, "unreadable params")
	refused(command(t, "S-T9", false, map[string]any{}), "pages of this user", "T9")
	refused(command(t, "S-W1", false, map[string]any{}), "service_worker")
	refused(command(t, "S-T2", false, map[string]any{}), "no session on page T2")
	refused(command(t, "S-T1", false, map[string]any{"url": "https://evil.test/"}), "read refused", "evil.test", "nothing was sent to it")
	if who := f.pol.last(); who != "page T1" {
		t.Errorf("a read on page T1 was judged by the policy of %q", who)
	}
	refused(command(t, "S-T1", false, map[string]any{"offset": -1}), "must not be negative")
	refused(command(t, "S-T1", false, map[string]any{"url": "https://unreachable.test/"}), "ERR_NAME_NOT_RESOLVED")
	if n := f.b.count("Page.navigate"); n != 1 {
		t.Errorf("%d navigations; only the reachable URL allowed by policy is navigated to", n)
	}

	v := f.r.Command(t.Context(), command(t, "S-T1", false, map[string]any{"url": "https://search.test/?q=pears", "maxChars": 100}), owns)
	if v.Refuse != "" {
		t.Fatal(v.Refuse)
	}
	var res Result
	if err := jsonv2.Unmarshal(v.Local, &res); err != nil {
		t.Fatal(err)
	}
	if res.URL != "https://search.test/?q=pears" || res.Title != "Pears" || res.NextOffset == nil || len([]rune(res.Text)) > 100 || res.TotalChars <= 100 {
		t.Errorf("first section %+v", res)
	}
	v = f.r.Command(t.Context(), command(t, "S-T1", false, map[string]any{"maxChars": 1 << 20}), owns)
	res = Result{}
	if err := jsonv2.Unmarshal(v.Local, &res); err != nil {
		t.Fatal(v.Refuse, err)
	}
	for _, want := range []string{"URL: https://search.test/?q=pears", searchNote, "sweet fruit of the temperate regions"} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, res.Text)
		}
	}
	if res.NextOffset != nil {
		t.Errorf("the whole text has no next section: %d", *res.NextOffset)
	}
	if len(f.worlds) == 0 || f.worlds[0] != "T1/7" {
		t.Errorf("the reader's worlds were not reported for hiding: %v", f.worlds)
	}
}

func TestRead(t *testing.T) {
	f := newFixture(t, Deps{})
	ctx := t.Context()
	if _, err := f.r.Read(ctx, "alice", "", 0, 0); err == nil {
		t.Error("a read without a url must fail")
	}
	if _, err := f.r.Read(ctx, "alice", "https://evil.test/", 0, 0); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "evil.test") || f.pol.last() != "user alice" {
		t.Errorf("refused url: %v (judged for %q)", err, f.pol.last())
	}
	if len(f.b.calls) != 0 || f.us.held != 0 {
		t.Errorf("a refused read reached the browser or the users: %v, %d holds", f.b.calls, f.us.held)
	}
	if _, err := f.r.Read(ctx, "nobody", "https://a.test/", 0, 0); err == nil || f.b.created != 0 {
		t.Errorf("a user who cannot be held: %v, %d tabs", err, f.b.created)
	}
	for i, u := range []string{"https://a.test/", "https://b.test/"} {
		res, err := f.r.Read(ctx, "alice", u, 0, 0)
		if err != nil || res.URL != u || !strings.Contains(res.Text, "sweet fruit") {
			t.Fatalf("read %d: %+v, %v", i, res, err)
		}
	}
	if f.b.created != 1 || f.us.held != 2 || f.us.unheld != 2 {
		t.Errorf("%d tabs opened, %d holds, %d released: want one tab reused, every hold released", f.b.created, f.us.held, f.us.unheld)
	}
	if _, err := f.r.Read(ctx, "bob", "https://a.test/", 0, 0); err != nil || f.b.created != 2 {
		t.Errorf("another user gets a tab of their own: %v, %d tabs", err, f.b.created)
	}
	f.pg.Destroyed("N1") // the page's end ends the reader's tab record
	f.us.full = true
	if _, err := f.r.Read(ctx, "alice", "https://a.test/", 0, 0); err == nil || !strings.Contains(err.Error(), "open a reader tab: the user has 3 tabs") || f.b.created != 2 {
		t.Errorf("a user at the tab cap: %v, %d tabs", err, f.b.created)
	}
	f.us.full = false
	if _, err := f.r.Read(ctx, "alice", "https://a.test/", 0, 0); err != nil || f.b.created != 3 {
		t.Errorf("a tab gone is opened again: %v, %d tabs", err, f.b.created)
	}
}

// TestLoadBound: a page that does not load in the bound is read as it is,
// noted, without a settle wait.
func TestLoadBound(t *testing.T) {
	f := newFixture(t, Deps{LoadTimeout: 200 * time.Millisecond, SettleTimeout: time.Hour})
	f.b.stuck = true
	start := time.Now()
	res, err := f.r.Read(t.Context(), "alice", "https://slow.test/", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, "had not finished loading after 200ms") {
		t.Errorf("no note of the load bound:\n%s", res.Text)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the read took %s: the settle bound applied to a page that did not load", d)
	}
}

// TestSettle: a page the reader just navigated is read once its DOM and
// network stayed quiet for settleQuiet; an agent's page that settled long
// ago is read at the first look.
func TestSettle(t *testing.T) {
	f := newFixture(t, Deps{SettleTimeout: 5 * time.Second})
	f.pg.Attached("T1", "S-T1")
	start := time.Now()
	if ok, err := f.r.settle(t.Context(), "S-T1", true); !ok || err != nil {
		t.Fatalf("settle: %v, %v", ok, err)
	}
	if d := time.Since(start); d < settleQuiet {
		t.Errorf("a fresh page settled after %s, under the quiet time", d)
	}
	n := f.b.count("Runtime.callFunctionOn")
	if ok, err := f.r.settle(t.Context(), "S-T1", false); !ok || err != nil || f.b.count("Runtime.callFunctionOn") != n+1 {
		t.Errorf("a page settled long ago: %v, %v, %d looks", ok, err, f.b.count("Runtime.callFunctionOn")-n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := f.r.settle(ctx, "S-T1", true); !errors.Is(err, context.Canceled) {
		t.Errorf("settle after its context ended: %v", err)
	}
}

func TestBounds(t *testing.T) {
	r := New(Deps{})
	if r.Bound() != DefaultLoadTimeout+DefaultSettleTimeout+callTimeout {
		t.Errorf("default bound %s", r.Bound())
	}
	r = New(Deps{LoadTimeout: time.Second, SettleTimeout: -1})
	if r.Bound() != time.Second+callTimeout || r.d.SettleTimeout != 0 {
		t.Errorf("bound %s, settle %s: a negative settle timeout means no wait", r.Bound(), r.d.SettleTimeout)
	}
}

func TestParseQuery(t *testing.T) {
	p, err := ParseQuery(url.Values{"url": {"https://a.test/"}, "offset": {"10"}, "maxChars": {"20"}})
	if err != nil || p != (Params{URL: "https://a.test/", Offset: 10, MaxChars: 20}) {
		t.Errorf("%+v, %v", p, err)
	}
	for q, want := range map[string]string{
		"":                         "needs a url",
		"url=x&offset=-1":          "offset must be a number",
		"url=x&maxChars=many":      "maxChars must be a number",
		"offset=1&maxChars=2&url=": "needs a url",
	} {
		v, _ := url.ParseQuery(q)
		if _, err := ParseQuery(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", q, err, want)
		}
	}
}

func TestServe(t *testing.T) {
	f := newFixture(t, Deps{})
	serve := func(u string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		f.r.Serve(t.Context(), w, "alice", Params{URL: u})
		return w
	}
	if w := serve("https://evil.test/"); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "read refused") {
		t.Errorf("refused: %d %s", w.Code, w.Body)
	}
	if w := serve("https://unreachable.test/"); w.Code != http.StatusBadGateway || !strings.Contains(w.Body.String(), "cdpguard: /read: navigate to") {
		t.Errorf("failed: %d %s", w.Code, w.Body)
	}
	w := serve("https://a.test/")
	var res Result
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json; charset=UTF-8" || jsonv2.Unmarshal(w.Body.Bytes(), &res) != nil || res.URL != "https://a.test/" {
		t.Errorf("read: %d %s", w.Code, w.Body)
	}
}

// TestServeHTTP: GET /read is refused before any read while the guard is
// not ready, for other methods, a bad query or a request without a user;
// a good one reads in the request's user's tab.
func TestServeHTTP(t *testing.T) {
	ready := false
	f := newFixture(t, Deps{
		Ready: func() bool { return ready },
		UserKey: func(w http.ResponseWriter, r *http.Request) (string, bool) {
			if r.Header.Get("User") == "" {
				http.Error(w, "no user", http.StatusForbidden)
				return "", false
			}
			return r.Header.Get("User"), true
		},
	})
	get := func(method, target, user string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, target, nil)
		if user != "" {
			r.Header.Set("User", user)
		}
		w := httptest.NewRecorder()
		f.r.ServeHTTP(w, r)
		return w
	}
	if w := get("GET", "/read?url=https://a.test/", "alice"); w.Code != http.StatusServiceUnavailable {
		t.Errorf("not ready: %d %s", w.Code, w.Body)
	}
	ready = true
	for _, c := range []struct {
		method, target, user string
		code                 int
	}{
		{"POST", "/read?url=https://a.test/", "alice", http.StatusMethodNotAllowed},
		{"GET", "/read", "alice", http.StatusBadRequest},
		{"GET", "/read?url=https://a.test/", "", http.StatusForbidden},
		{"GET", "/read?url=https://evil.test/", "alice", http.StatusForbidden},
		{"GET", "/read?url=https://a.test/", "alice", http.StatusOK},
	} {
		if w := get(c.method, c.target, c.user); w.Code != c.code {
			t.Errorf("%s %s (%q): %d %s, want %d", c.method, c.target, c.user, w.Code, w.Body, c.code)
		}
	}
	if f.us.held != 1 || !slices.Contains(f.pol.asked, "user alice") {
		t.Errorf("%d reads held a user, judged for %q; want 1, for alice", f.us.held, f.pol.asked)
	}
}
