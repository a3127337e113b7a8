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

func handler(c *calls, open func(ctx context.Context, key string) (string, func(), error)) *Handler {
	owner := map[string]string{"C1": "alice", "C3": "bob", "P1": "alice", "P2": "alice", "P3": "bob"}
	return New(Deps{
		Browser:       c,
		Targets:       threePages{},
		Version:       func() browser.Version { return browser.Version{Browser: "Chrome/1"} },
		BrowserID:     func() string { return "ID" },
		KeyOf:         func(h http.Header) (string, error) { return h.Get("X-User"), nil },
		SessionHeader: "X-User",
		InContext:     func(key, bctx string) bool { return owner[bctx] == key },
		Owns:          func(key, id string) bool { return owner[id] == key },
		CheckURL: func(u string) string {
			if strings.HasPrefix(u, "file:") {
				return "cdpguard: refused"
			}
			return ""
		},
		NotWeb: func(_, id string) string {
			if id == "P2" {
				return "cdpguard: not web content"
			}
			return ""
		},
		Open: open,
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
	h := handler(&calls{}, nil)
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
	h := handler(c, nil)
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
	var err error
	released := 0
	h := handler(c, func(context.Context, string) (string, func(), error) {
		if err != nil {
			return "", nil, err
		}
		return "C1", func() { released++ }, nil
	})
	if w := do(h.NewTab, http.MethodGet, "/json/new?https://a.test/", "alice"); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", w.Code)
	}
	if w := do(h.NewTab, http.MethodPut, "/json/new?file:///etc/passwd", "alice"); w.Code != http.StatusForbidden {
		t.Errorf("file URL: %d", w.Code)
	}
	err = &Refused{Err: errors.New("at the tab cap")}
	if w := do(h.NewTab, http.MethodPut, "/json/new?https://a.test/", "alice"); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "/json/new is refused: at the tab cap") {
		t.Errorf("cap: %d %s", w.Code, w.Body)
	}
	err = errors.New("busy")
	if w := do(h.NewTab, http.MethodPut, "/json/new?https://a.test/", "alice"); w.Code != http.StatusServiceUnavailable {
		t.Errorf("acquire failed: %d", w.Code)
	}
	if len(c.methods) != 0 {
		t.Fatalf("refused creates reached the browser: %v", c.methods)
	}
	err = nil
	if w := do(h.NewTab, http.MethodPut, "/json/new?https://a.test/", "alice"); w.Code != 200 || !strings.Contains(w.Body.String(), `"id":"NEW"`) || released != 1 {
		t.Errorf("new: %d %s, released %d", w.Code, w.Body, released)
	}
}
