// Package devtoolsjson serves Chrome's /json/* HTTP surface for the guard:
// /json/version, /json/list, /json/new, /json/close/<id>,
// /json/activate/<id> and /json/protocol, each for the user a request
// names and over that user's web targets only. The endpoints that change
// state take PUT only, like Chrome's /json/new: no GET (an <iframe>, <img>
// or no-cors fetch from a page carries no Origin when the guard's address
// is not a secure context) may open, close or raise a tab
// (docs/decisions/2026-12-02-self.md). The guard supplies the browser, the
// users, isolation and its checks through Deps. It observes no CDP events.
package devtoolsjson

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/browser"
	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/rules"
	"github.com/cdpguard/cdpguard/internal/users"
)

// Caller calls the browser on the guard's own session.
type Caller interface {
	Call(ctx context.Context, sessionID, method string, params any) (jsonv2.Value, error)
}

// Refused wraps why a user may not open a tab now (a per-user cap):
// /json/new answers it with 403, a user that cannot be held with 503.
type Refused struct{ Err error }

func (r *Refused) Error() string { return r.Err.Error() }
func (r *Refused) Unwrap() error { return r.Err }

// Targets lists the browser's targets (internal/targets.Record).
type Targets interface {
	List(ctx context.Context) ([]cdpmsg.TargetInfo, error)
}

// About is what the guard knows of its browser.
type About interface {
	// Version is what /json/version says about the browser.
	Version() browser.Version
}

// Users is the users registry (internal/users) as the handlers check a
// request's user.
type Users interface {
	Lookup(key string) *users.User // nil for a user with no context yet
	OwnsContext(u *users.User, browserContextID string) bool
	OwnsTarget(u *users.User, targetID string) bool
	Release(u *users.User) // lets go of a user Guard.Acquire held
}

// Isolation keeps a user to web content and to their tab cap
// (internal/isolation).
type Isolation interface {
	// NotWebRefusal returns why method may not act on targetID (not web
	// content), "" when it may.
	NotWebRefusal(method, targetID string) string
	// CheckTabs refuses a new tab past u's tab cap.
	CheckTabs(u *users.User) error
}

// Guard is the guard's side: the user of a request's headers as its
// policy has them, and holding that user.
type Guard interface {
	// KeyOf returns the user key of a request's headers, or why it is
	// refused (403).
	KeyOf(h http.Header) (string, error)
	// Acquire holds key's user, making their browser context on first
	// use; Users.Release lets go of it.
	Acquire(ctx context.Context, key string) (*users.User, error)
}

// Deps is what the handlers need from the guard.
type Deps struct {
	Browser Caller
	// Targets lists the browser's targets.
	Targets Targets
	About   About
	// BrowserID is the id in the browser's /devtools/browser/<id> URL.
	BrowserID string
	Guard     Guard
	Users     Users
	Isolation Isolation
	// SessionHeader keys a user; RequireSessionHeader refuses (401) a
	// request without it.
	SessionHeader        string
	RequireSessionHeader bool
}

// open holds key's user for a new tab, within their tab cap: their
// browser context's id, and release, to call once the tab is created.
// See Refused.
func (h *Handler) open(ctx context.Context, key string) (browserContextID string, release func(), err error) {
	u, err := h.d.Guard.Acquire(ctx, key)
	if err != nil {
		return "", nil, err
	}
	if err := h.d.Isolation.CheckTabs(u); err != nil {
		h.d.Users.Release(u)
		return "", nil, &Refused{Err: err}
	}
	return u.Primary, func() { h.d.Users.Release(u) }, nil
}

// Handler serves the /json/* endpoints.
type Handler struct{ d Deps }

// New returns a Handler.
func New(d Deps) *Handler { return &Handler{d: d} }

// WriteText answers code with s as plain text.
func WriteText(w http.ResponseWriter, code int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(s))
}

// WriteJSON answers v as JSON (500 when it does not marshal).
func WriteJSON(w http.ResponseWriter, v any) {
	b, err := jsonv2.Marshal(v)
	if err != nil {
		http.Error(w, "cdpguard: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_, _ = w.Write(b)
}

func wsBase(r *http.Request) string { return "ws://" + r.Host }

// Version serves /json/version: the browser's, with the guard's browser
// WebSocket URL on the Host the client used.
func (h *Handler) Version(w http.ResponseWriter, r *http.Request) {
	v := h.d.About.Version()
	v.WebSocketDebuggerURL = wsBase(r) + "/devtools/browser/" + h.d.BrowserID
	WriteJSON(w, v)
}

// Protocol serves /json/protocol: an empty protocol description.
func (h *Handler) Protocol(w http.ResponseWriter, _ *http.Request) {
	WriteJSON(w, map[string]any{"version": map[string]string{"major": "1", "minor": "3"}, "domains": []any{}})
}

type listEntry struct {
	Description          string `json:"description"`
	ID                   string `json:"id"`
	Title                string `json:"title"`
	Type                 string `json:"type"`
	URL                  string `json:"url"`
	WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
}

func entry(r *http.Request, t cdpmsg.TargetInfo) listEntry {
	return listEntry{ID: t.TargetID, Title: t.Title, Type: t.Type, URL: t.URL,
		WebSocketDebuggerURL: wsBase(r) + "/devtools/page/" + t.TargetID}
}

// UserKey returns the request's user; ok is false (and the request is
// answered) when its group is refused or the header is required and
// missing.
func (h *Handler) UserKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	key, err := h.d.Guard.KeyOf(r.Header)
	if err != nil {
		http.Error(w, "cdpguard: "+err.Error(), http.StatusForbidden)
		return "", false
	}
	if r.Header.Get(h.d.SessionHeader) == "" && h.d.RequireSessionHeader {
		http.Error(w, "cdpguard: the "+h.d.SessionHeader+" header is required (--require-session-header)", http.StatusUnauthorized)
		return "", false
	}
	return key, true
}

// List serves /json/list: the user's web targets.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) {
	key, ok := h.UserKey(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	ts, err := h.d.Targets.List(ctx)
	if err != nil {
		http.Error(w, "cdpguard: "+err.Error(), http.StatusBadGateway)
		return
	}
	out := []listEntry{}
	u := h.d.Users.Lookup(key)
	for _, t := range ts {
		if u == nil || !h.d.Users.OwnsContext(u, t.BrowserContextID) || firewall.NotWeb(t.Type, t.URL) != "" {
			continue
		}
		out = append(out, entry(r, t))
	}
	WriteJSON(w, out)
}

// NewTab serves /json/new?<url>: a tab in the user's context.
func (h *Handler) NewTab(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		w.Header().Set("Allow", http.MethodPut)
		http.Error(w, "cdpguard: use PUT for /json/new", http.StatusMethodNotAllowed)
		return
	}
	target := r.URL.RawQuery
	if target == "" {
		target = "about:blank"
	}
	if msg := rules.URLRefusal("/json/new", target); msg != "" {
		http.Error(w, msg, http.StatusForbidden)
		return
	}
	key, ok := h.UserKey(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	bctx, release, err := h.open(ctx, key)
	if refused := (*Refused)(nil); errors.As(err, &refused) {
		http.Error(w, "cdpguard: /json/new is refused: "+refused.Error(), http.StatusForbidden)
		return
	}
	if err != nil {
		http.Error(w, "cdpguard: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer release()
	res, err := h.d.Browser.Call(ctx, "", "Target.createTarget", map[string]any{"url": target, "browserContextId": bctx})
	if err != nil {
		http.Error(w, "cdpguard: "+err.Error(), http.StatusBadGateway)
		return
	}
	var c struct {
		TargetID string `json:"targetId"`
	}
	_ = jsonv2.Unmarshal(res, &c)
	WriteJSON(w, entry(r, cdpmsg.TargetInfo{TargetID: c.TargetID, Type: "page", URL: target}))
}

// Close serves /json/close/<id>.
func (h *Handler) Close(w http.ResponseWriter, r *http.Request, id string) {
	h.targetAction(w, r, "Target.closeTarget", id, "Target is closing")
}

// Activate serves /json/activate/<id>.
func (h *Handler) Activate(w http.ResponseWriter, r *http.Request, id string) {
	h.targetAction(w, r, "Target.activateTarget", id, "Target activated")
}

// targetAction calls method on a target of the user's, PUT only.
func (h *Handler) targetAction(w http.ResponseWriter, r *http.Request, method, id, ok string) {
	if r.Method != http.MethodPut {
		w.Header().Set("Allow", http.MethodPut)
		http.Error(w, "cdpguard: use PUT for "+strings.TrimSuffix(r.URL.Path, id)+"<id>: endpoints that change state take no GET", http.StatusMethodNotAllowed)
		return
	}
	key, allowed := h.UserKey(w, r)
	if !allowed {
		return
	}
	if u := h.d.Users.Lookup(key); u == nil || !h.d.Users.OwnsTarget(u, id) {
		http.Error(w, "cdpguard: no such target for this user", http.StatusNotFound)
		return
	}
	if msg := h.d.Isolation.NotWebRefusal(method, id); msg != "" {
		http.Error(w, msg, http.StatusForbidden)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if _, err := h.d.Browser.Call(ctx, "", method, map[string]any{"targetId": id}); err != nil {
		http.Error(w, "cdpguard: "+err.Error(), http.StatusNotFound)
		return
	}
	WriteText(w, http.StatusOK, ok)
}
