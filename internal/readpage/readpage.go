// Package readpage drives the pages the reader reads: it opens (or reuses)
// a user's reader tab, navigates it and waits for the load, waits for the
// page to settle, and runs the in-page reader (js/read.js) in the guard's
// hidden isolated world; internal/reader turns the rendered DOM into text
// and cuts the requested section. It answers Guard.read on an agent's page
// and the guard's Read (GET /read, `cdpguard read`).
//
// It observes no CDP event itself: the guard's session on each page is the
// page registry's (internal/pages, Deps.Pages), and a user's reader tab is
// a record on its page, which the page's end (Target.targetDestroyed)
// forgets. Policy, users and the guard's worlds are reached through the
// narrow interfaces in Deps.
package readpage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/pages"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// ErrRefused is wrapped by read errors that refuse the URL by policy
// (GET /read answers them with 403); cdpguard exports it as ErrReadRefused.
var ErrRefused = errors.New("cdpguard: read refused")

// Default bounds of one read.
const (
	// DefaultLoadTimeout bounds the wait for a page read with a url to
	// finish loading; the page is read after it either way.
	DefaultLoadTimeout = 10 * time.Second
	// DefaultSettleTimeout bounds the wait for a loaded page to settle.
	DefaultSettleTimeout = 3 * time.Second
	// callTimeout bounds one read after the load (snapshot and extraction).
	callTimeout = 20 * time.Second
)

// Result is one section of a page's readable text: the title, the URL and
// any notes on top, then the main content. Sections stitch back to the
// whole text: read again at NextOffset until it is absent.
type Result struct {
	URL        string `json:"url"`
	Title      string `json:"title"`
	Text       string `json:"text"`
	Offset     int    `json:"offset"`
	NextOffset *int   `json:"nextOffset,omitempty"`
	TotalChars int    `json:"totalChars"`
}

// Params are the params of Guard.read (and GET /read's query).
type Params struct {
	URL      string `json:"url,omitempty"`
	Offset   int    `json:"offset,omitempty"`
	MaxChars int    `json:"maxChars,omitempty"`
}

// Caller sends a command over the guard's browser connection and waits for
// its reply (relay.Mux).
type Caller interface {
	Call(ctx context.Context, sessionID, method string, params any) (jsonv2.Value, error)
}

// Users holds the users reads run for.
type Users interface {
	// Hold acquires the user of key (making their browser context on first
	// use) until release is called.
	Hold(ctx context.Context, key string) (u User, release func(), err error)
}

// User is a held user, as their reader tab needs them.
type User interface {
	// Owns reports whether targetID is in one of the user's contexts.
	Owns(targetID string) bool
	// CheckTabs returns an error naming the cap when one more tab would be
	// over the user's tab cap.
	CheckTabs() error
	// Context is the browser context new tabs of the user open in.
	Context() string
}

// Pages knows the guard's own session on each page and the end of its
// setup (internal/pages.Registry), and holds each reader tab's record.
type Pages interface {
	// Page returns the page of targetID, nil when the registry never
	// heard of it.
	Page(targetID string) *pages.Page
	// SessionOf returns the guard's session on page targetID, "" when the
	// guard has none (not set up, or destroyed).
	SessionOf(targetID string) string
	// AwaitSetup waits until the guard's setup on a new target ended.
	AwaitSetup(ctx context.Context, targetID string) error
}

// Worlds records the reader's isolated worlds among the guard's, which
// are hidden from agents (internal/worlds.Worlds).
type Worlds interface {
	// MadeIn records a context of World made in frameID of page target
	// ("": the page of the frame is not known here).
	MadeIn(target target.ID, frameID cdp.FrameID, contextID runtime.ExecutionContextID)
}

// Deps is what a Reader needs of the guard.
type Deps struct {
	Browser Caller
	Policy  Policy
	Users   Users
	Pages   Pages
	// World is the name of the reader's isolated world, which the guard
	// hides from agents; each context of it is recorded in Worlds.
	World  string
	Worlds Worlds
	// SearchURL marks pages under it as search results (--search-url).
	SearchURL string
	// Ready reports whether the guard serves (GET /read answers 503
	// until it does); UserKey returns the user of a request, or answers it
	// and reports false (devtoolsjson.Handler.UserKey).
	Ready   func() bool
	UserKey func(w http.ResponseWriter, r *http.Request) (string, bool)
	// LoadTimeout bounds the load of a page read with a url (0: the
	// default); SettleTimeout the wait for it to settle (0: the default,
	// negative: no wait).
	LoadTimeout, SettleTimeout time.Duration
}

// Reader reads pages for the guard. It is safe for concurrent use.
type Reader struct {
	d Deps

	mu   sync.Mutex
	tabs map[string]*tab // user key → the tab GET /read uses
	// onPage is the reader tab's record on its page: the page's end
	// forgets the tab (tabEnded).
	onPage *pages.Slot[*tab]
}

// tab is a user's tab for GET /read; mu keeps two reads from navigating it
// at once.
type tab struct {
	mu       sync.Mutex
	user     string
	targetID string // written under mu and Reader.mu
}

// New returns a Reader over d.
func New(d Deps) *Reader {
	if d.LoadTimeout <= 0 {
		d.LoadTimeout = DefaultLoadTimeout
	}
	switch {
	case d.SettleTimeout == 0:
		d.SettleTimeout = DefaultSettleTimeout
	case d.SettleTimeout < 0:
		d.SettleTimeout = 0
	}
	r := &Reader{d: d, tabs: map[string]*tab{}}
	r.onPage = pages.NewSlot(r.tabEnded)
	return r
}

// Bound is the longest one read takes: the load, the settle and the read.
func (r *Reader) Bound() time.Duration {
	return r.d.LoadTimeout + r.d.SettleTimeout + callTimeout
}

// tabEnded forgets the reader tab a page was, at the page's end.
func (r *Reader) tabEnded(pg *pages.Page, t *tab) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.targetID == string(pg.ID()) && r.tabs[t.user] == t {
		delete(r.tabs, t.user)
	}
}

func (r *Reader) session(targetID string) string { return r.d.Pages.SessionOf(targetID) }

// Command answers Guard.read on an agent's page session; owns reports
// whether a target is the agent's user's. It runs on the agent's read
// goroutine, so that agent waits for the read (bounded); ctx is the
// agent's, so a read ends when its agent goes.
func (r *Reader) Command(ctx context.Context, cmd relay.Command, owns func(targetID string) bool) relay.Verdict {
	if cmd.Browser {
		return refusal(cmd.Method, "it works on a page session: attach to the page (Target.attachToTarget with flatten) and send it there")
	}
	var p Params
	if len(cmd.Params) > 0 {
		if err := jsonv2.Unmarshal(cmd.Params, &p); err != nil {
			return refusal(cmd.Method, "unreadable params: "+err.Error())
		}
	}
	ctx, cancel := context.WithTimeout(ctx, r.Bound())
	defer cancel()
	res, err := r.d.Browser.Call(ctx, cmd.SessionID, "Target.getTargetInfo", nil)
	if err != nil {
		return refusal(cmd.Method, err.Error())
	}
	var ti struct {
		TargetInfo struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
		} `json:"targetInfo"`
	}
	if err := cdpmsg.UnmarshalBrowser(res, &ti); err != nil {
		return refusal(cmd.Method, err.Error())
	}
	t := ti.TargetInfo
	if t.Type != "page" || !owns(t.TargetID) {
		return refusal(cmd.Method, fmt.Sprintf("it works on pages of this user; target %s is a %s", t.TargetID, t.Type))
	}
	out, err := r.readTarget(ctx, t.TargetID, p)
	if err != nil {
		return refusal(cmd.Method, strings.TrimPrefix(err.Error(), "cdpguard: "))
	}
	b, err := jsonv2.Marshal(out)
	if err != nil {
		return refusal(cmd.Method, err.Error())
	}
	return relay.Verdict{Local: b}
}

// refusal is an error answer naming the method and why.
func refusal(method, why string) relay.Verdict {
	return relay.Verdict{Refuse: cdpmsg.Refusal(method, why)}
}

// Read reads url in the user's reader tab (opened in the user's browser
// context on first use, reused after) and returns the section at offset of
// at most maxChars characters (0: 30,000). user is the session header's
// value ("" is the shared fallback user). A URL the policy blocks is
// refused with an error wrapping ErrRefused that names the host and the
// reachable origins; nothing is sent to that host.
func (r *Reader) Read(ctx context.Context, user, url string, offset, maxChars int) (Result, error) {
	if url == "" {
		return Result{}, errors.New("read: a url is needed")
	}
	if msg := r.userRefusal(user, url); msg != "" {
		return Result{}, fmt.Errorf("%w: %s", ErrRefused, msg)
	}
	u, release, err := r.d.Users.Hold(ctx, user)
	if err != nil {
		return Result{}, err
	}
	defer release()
	r.mu.Lock()
	t := r.tabs[user]
	if t == nil {
		t = &tab{user: user}
		r.tabs[user] = t
	}
	r.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.targetID == "" || !u.Owns(t.targetID) || r.session(t.targetID) == "" {
		id, err := r.openTab(ctx, u)
		if err != nil {
			return Result{}, err
		}
		r.mu.Lock() // tabEnded reads targetID under r.mu
		t.targetID = id
		r.mu.Unlock()
		r.onPage.Set(r.d.Pages.Page(id), t) // made by AwaitSetup at the latest
	}
	return r.readTarget(ctx, t.targetID, Params{URL: url, Offset: offset, MaxChars: maxChars})
}

// openTab opens a blank reader tab in u's context and waits for the
// guard's setup on it.
func (r *Reader) openTab(ctx context.Context, u User) (string, error) {
	// The reader's tab counts toward the user's tab cap: refuse it here,
	// naming the cap, rather than have the guard close it once open.
	if err := u.CheckTabs(); err != nil {
		return "", fmt.Errorf("open a reader tab: %w", err)
	}
	res, err := r.d.Browser.Call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank", "browserContextId": u.Context()})
	if err != nil {
		return "", fmt.Errorf("open a reader tab: %w", err)
	}
	var c struct {
		TargetID string `json:"targetId"`
	}
	if err := cdpmsg.UnmarshalBrowser(res, &c); err != nil {
		return "", fmt.Errorf("open a reader tab: %w", err)
	}
	if err := r.d.Pages.AwaitSetup(ctx, c.TargetID); err != nil {
		return "", err
	}
	return c.TargetID, nil
}
