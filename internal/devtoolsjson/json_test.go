package devtoolsjson

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/browser"
	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/users"
)

type calls struct{ methods []string }

func (c *calls) Call(_ context.Context, _, method string, _ any) (jsonv2.Value, error) {
	c.methods = append(c.methods, method)
	return jsonv2.Value(`{"targetId":"NEW"}`), nil
}

// handler is a Handler over a browser with alice's page P1 (context C1), a
// chrome:// page of hers P2, and bob's page P3 (context C3).
// threePages lists alice's P1 and P2 and bob's P3.
type threePages struct{}

func (threePages) List(context.Context) ([]cdpmsg.TargetInfo, error) {
	return []cdpmsg.TargetInfo{
		{TargetID: "P1", Type: "page", URL: "https://a.test/", BrowserContextID: "C1"},
		{TargetID: "P2", Type: "page", URL: "chrome://settings/", BrowserContextID: "C1"},
		{TargetID: "P3", Type: "page", URL: "https://b.test/", BrowserContextID: "C3"},
	}, nil
}

// guard is the handler's guard, users and isolation: alice owns C1, P1
// and P2, bob C3 and P3; P2 is not web content. acquireErr and tabsErr,
// when set, fail Acquire and CheckTabs; released counts Release.
type guard struct {
	acquireErr, tabsErr error
	released            int
}

var owner = map[string]string{"C1": "alice", "C3": "bob", "P1": "alice", "P2": "alice", "P3": "bob"}

func (*guard) Version() browser.Version                    { return browser.Version{Browser: "Chrome/1"} }
func (*guard) KeyOf(h http.Header) (string, error)         { return h.Get("X-User"), nil }
func (*guard) Lookup(key string) *users.User               { return &users.User{Key: key, Primary: "C1"} }
func (*guard) OwnsContext(u *users.User, bctx string) bool { return owner[bctx] == u.Key }
func (*guard) OwnsTarget(u *users.User, id string) bool    { return owner[id] == u.Key }
func (g *guard) Release(*users.User)                       { g.released++ }
func (g *guard) CheckTabs(*users.User) error               { return g.tabsErr }
func (g *guard) Acquire(_ context.Context, key string) (*users.User, error) {
	if g.acquireErr != nil {
		return nil, g.acquireErr
	}
	return &users.User{Key: key, Primary: "C1"}, nil
}

func (*guard) NotWebRefusal(_, id string) string {
	if id == "P2" {
		return "cdpguard: not web content"
	}
	return ""
}

func handler(c *calls, g *guard) *Handler {
	return New(Deps{
		Browser:       c,
		Targets:       threePages{},
		About:         g,
		BrowserID:     "ID",
		Guard:         g,
		Users:         g,
		Isolation:     g,
		SessionHeader: "X-User",
	})
}

func do(f func(w http.ResponseWriter, r *http.Request), method, target, user string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	r := httptest.NewRequest(method, "http://127.0.0.1:9222"+target, nil)
	if user != "" {
		r.Header.Set("X-User", user)
	}
	f(w, r)
	return w
}

func TestList(t *testing.T) {
	h := handler(&calls{}, &guard{})
	w := do(h.List, http.MethodGet, "/json/list", "alice")
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"id":"P1"`) || strings.Contains(w.Body.String(), "P2") || strings.Contains(w.Body.String(), "P3") {
		t.Errorf("alice's list: %d %s", w.Code, w.Body)
	}
	if w := do(h.Version, http.MethodGet, "/json/version", ""); !strings.Contains(w.Body.String(), `"webSocketDebuggerUrl":"ws://127.0.0.1:9222/devtools/browser/ID"`) {
		t.Errorf("version: %s", w.Body)
	}
}

// TestTargetActions: PUT only; another user's target is 404 and a target
// that is not web content 403, neither reaching the browser.
func TestTargetActions(t *testing.T) {
	c := &calls{}
	h := handler(c, &guard{})
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if w := do(func(w http.ResponseWriter, r *http.Request) { h.Close(w, r, "P1") }, m, "/json/close/P1", "alice"); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != http.MethodPut {
			t.Errorf("%s close: %d", m, w.Code)
		}
	}
	if w := do(func(w http.ResponseWriter, r *http.Request) { h.Close(w, r, "P3") }, http.MethodPut, "/json/close/P3", "alice"); w.Code != http.StatusNotFound {
		t.Errorf("bob's target: %d", w.Code)
	}
	if w := do(func(w http.ResponseWriter, r *http.Request) { h.Activate(w, r, "P2") }, http.MethodPut, "/json/activate/P2", "alice"); w.Code != http.StatusForbidden {
		t.Errorf("chrome page: %d", w.Code)
	}
	if len(c.methods) != 0 {
		t.Fatalf("refused actions reached the browser: %v", c.methods)
	}
	if w := do(func(w http.ResponseWriter, r *http.Request) { h.Close(w, r, "P1") }, http.MethodPut, "/json/close/P1", "alice"); w.Code != 200 || c.methods[0] != "Target.closeTarget" {
		t.Errorf("close: %d %v", w.Code, c.methods)
	}
}

// TestNewTab: PUT only, a refused URL 403, a cap 403, a failed acquire 503,
// and a tab made in the user's context is released after.
func TestNewTab(t *testing.T) {
	c := &calls{}
	g := &guard{}
	h := handler(c, g)
	if w := do(h.NewTab, http.MethodGet, "/json/new?https://a.test/", "alice"); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", w.Code)
	}
	if w := do(h.NewTab, http.MethodPut, "/json/new?file:///etc/passwd", "alice"); w.Code != http.StatusForbidden {
		t.Errorf("file URL: %d", w.Code)
	}
	g.tabsErr = errors.New("at the tab cap")
	if w := do(h.NewTab, http.MethodPut, "/json/new?https://a.test/", "alice"); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "/json/new is refused: at the tab cap") || g.released != 1 {
		t.Errorf("cap: %d %s, released %d (the user held for the tab is let go)", w.Code, w.Body, g.released)
	}
	g.tabsErr, g.acquireErr = nil, errors.New("busy")
	if w := do(h.NewTab, http.MethodPut, "/json/new?https://a.test/", "alice"); w.Code != http.StatusServiceUnavailable {
		t.Errorf("acquire failed: %d", w.Code)
	}
	if len(c.methods) != 0 {
		t.Fatalf("refused creates reached the browser: %v", c.methods)
	}
	g.acquireErr = nil
	before := g.released
	if w := do(h.NewTab, http.MethodPut, "/json/new?https://a.test/", "alice"); w.Code != 200 || !strings.Contains(w.Body.String(), `"id":"NEW"`) || g.released-before != 1 {
		t.Errorf("new: %d %s, released %d", w.Code, w.Body, g.released-before)
	}
}
