package cdpguard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/grants"
	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/reader"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/scopes"
	"github.com/cdpguard/cdpguard/internal/worlds"
	"github.com/cdpguard/cdpguard/js"
)

// ErrReadRefused is wrapped by Read errors that refuse the URL by policy
// (GET /read answers them with 403).
var ErrReadRefused = errors.New("cdpguard: read refused")

// defaultReadLoadTimeout bounds the wait for a page read with a url to
// finish loading; the page is read after it either way.
const defaultReadLoadTimeout = 10 * time.Second

// readCallTimeout bounds one read after the load (snapshot and extraction).
const readCallTimeout = 20 * time.Second

// searchNote is put on top of pages under --search-url.
const searchNote = "this is a search results page. Search results are not a source: take facts and numbers only from pages opened with read, and name what is missing instead of filling it in."

// ReadResult is one section of a page's readable text: the title, the URL
// and any notes on top, then the main content. Sections stitch back to the
// whole text: read again at NextOffset until it is absent.
type ReadResult struct {
	URL        string `json:"url"`
	Title      string `json:"title"`
	Text       string `json:"text"`
	Offset     int    `json:"offset"`
	NextOffset *int   `json:"nextOffset,omitempty"`
	TotalChars int    `json:"totalChars"`
}

// readParams are the params of Guard.read (and GET /read's query).
type readParams struct {
	URL      string `json:"url,omitempty"`
	Offset   int    `json:"offset,omitempty"`
	MaxChars int    `json:"maxChars,omitempty"`
}

// readState is the reader's part of a Guard.
type readState struct {
	world string // the reader's isolated world name (hidden from agents)

	mu       sync.Mutex
	sessions map[string]string     // page target id → the guard's session on it
	tabs     map[string]*readerTab // user key → the tab GET /read uses
}

// readerTab is a user's tab for GET /read; mu keeps two reads from
// navigating it at once.
type readerTab struct {
	mu       sync.Mutex
	targetID string // written under mu and readState.mu
}

func newReadState(w *worlds.Worlds) *readState {
	return &readState{world: w.NewName("reader"), sessions: map[string]string{}, tabs: map[string]*readerTab{}}
}

// pageAttached records the guard's own session on a page.
func (r *readState) pageAttached(targetID, sessionID string) {
	r.mu.Lock()
	r.sessions[targetID] = sessionID
	r.mu.Unlock()
}

// pageGone forgets a page that was destroyed, and the reader tab it was.
func (r *readState) pageGone(targetID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.sessions, targetID)
	for user, tab := range r.tabs {
		if tab.targetID == targetID {
			delete(r.tabs, user)
		}
	}
}

func (r *readState) session(targetID string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[targetID]
}

// guardRead answers Guard.read on an agent's page session. It runs on the
// agent's read goroutine, so that agent waits for the read (bounded); ctx
// is the agent's, so a read ends when its agent goes.
func (g *Guard) guardRead(ctx context.Context, st *agentState, cmd relay.Command) relay.Verdict {
	if cmd.Browser {
		return refusal(cmd.Method, "it works on a page session: attach to the page (Target.attachToTarget with flatten) and send it there")
	}
	var p readParams
	if err := unmarshalParams(cmd.Params, &p); err != nil {
		return refusal(cmd.Method, "unreadable params: "+err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, g.readLoadTimeout()+g.readSettleTimeout()+readCallTimeout)
	defer cancel()
	res, err := g.mux.Call(ctx, cmd.SessionID, "Target.getTargetInfo", nil)
	if err != nil {
		return refusal(cmd.Method, err.Error())
	}
	var ti struct {
		TargetInfo targetInfo `json:"targetInfo"`
	}
	if err := jsonv2.Unmarshal(res, &ti); err != nil {
		return refusal(cmd.Method, err.Error())
	}
	t := ti.TargetInfo
	if t.Type != "page" || !g.users.OwnsTarget(st.user, t.TargetID) {
		return refusal(cmd.Method, fmt.Sprintf("it works on pages of this user; target %s is a %s", t.TargetID, t.Type))
	}
	out, err := g.readTarget(ctx, t.TargetID, p)
	if err != nil {
		return refusal(cmd.Method, strings.TrimPrefix(err.Error(), "cdpguard: "))
	}
	b, err := jsonv2.Marshal(out)
	if err != nil {
		return refusal(cmd.Method, err.Error())
	}
	return relay.Verdict{Local: b}
}

// Read reads url in the user's reader tab (opened in the user's browser
// context on first use, reused after) and returns the section at offset of
// at most maxChars characters (0: 30,000). user is the session header's
// value ("" is the shared fallback user). A URL the policy blocks is
// refused with an error wrapping ErrReadRefused that names the host and the
// reachable origins; nothing is sent to that host.
func (g *Guard) Read(ctx context.Context, user, url string, offset, maxChars int) (ReadResult, error) {
	if url == "" {
		return ReadResult{}, errors.New("read: a url is needed")
	}
	if msg := g.readRefusal(user, g.scopes.OfUser(g.users.Lookup(user)), url); msg != "" {
		return ReadResult{}, fmt.Errorf("%w: %s", ErrReadRefused, msg)
	}
	u, err := g.acquireUser(ctx, user)
	if err != nil {
		return ReadResult{}, err
	}
	defer g.users.Release(u)
	g.rd.mu.Lock()
	tab := g.rd.tabs[user]
	if tab == nil {
		tab = &readerTab{}
		g.rd.tabs[user] = tab
	}
	g.rd.mu.Unlock()
	tab.mu.Lock()
	defer tab.mu.Unlock()
	if tab.targetID == "" || !g.users.OwnsTarget(u, tab.targetID) || g.rd.session(tab.targetID) == "" {
		// The reader's tab counts toward the user's tab cap: refuse it here,
		// naming the cap, rather than have the guard close it once open.
		if err := g.iso.CheckTabs(u); err != nil {
			return ReadResult{}, fmt.Errorf("open a reader tab: %w", err)
		}
		res, err := g.mux.Call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank", "browserContextId": u.Primary})
		if err != nil {
			return ReadResult{}, fmt.Errorf("open a reader tab: %w", err)
		}
		var c struct {
			TargetID string `json:"targetId"`
		}
		if err := jsonv2.Unmarshal(res, &c); err != nil {
			return ReadResult{}, fmt.Errorf("open a reader tab: %w", err)
		}
		if err := g.awaitSetup(ctx, c.TargetID); err != nil {
			return ReadResult{}, err
		}
		g.rd.mu.Lock() // pageGone reads targetID under rd.mu
		tab.targetID = c.TargetID
		g.rd.mu.Unlock()
	}
	return g.readTarget(ctx, tab.targetID, readParams{URL: url, Offset: offset, MaxChars: maxChars})
}

// readRefusal returns why url may not be read by the user of key (their
// group's policy) in the session sc (nil: no grants), naming the host and
// the reachable origins, or "".
func (g *Guard) readRefusal(key string, sc *scopes.Scope, url string) string {
	p := g.policyOf(key)
	if msg := readRefusal(p, sc.Grants(), url); msg != "" {
		return msg
	}
	if d := g.refuseSelf(p.Decide(url), url); !d.Allowed && d.Reason == fetchdomain.ReasonSelf {
		return fmt.Sprintf("%s (%s); nothing was sent to it", d.Reason, truncateReason(url))
	}
	return ""
}

func readRefusal(p *policy.Policy, granted *grants.Set, url string) string {
	if msg := urlRefusal("read", url); msg != "" {
		return strings.TrimPrefix(msg, "cdpguard: ")
	}
	if d := granted.Decide(p.Decide(url)); !d.Allowed {
		origins := "none (the allowlist is empty)"
		if o := p.Origins(); len(o) > 0 {
			origins = strings.Join(o, ", ")
		}
		return fmt.Sprintf("%s (%s); nothing was sent to it. Reachable origins: %s", d.Reason, truncateReason(url), origins)
	}
	return ""
}

// CheckRead returns the error Read would refuse url with under cfg's
// policy (wrapping ErrReadRefused, or the policy's or policy file's
// error), without a
// browser: `cdpguard read` refuses before it starts one.
func CheckRead(cfg Config, url string) error {
	rules, _, err := loadPolicy(cfg) // the policy file's default group, when there is one
	if err != nil {
		return err
	}
	p := rules.Default().Policy
	if msg := readRefusal(p, nil, url); msg != "" {
		return fmt.Errorf("%w: %s", ErrReadRefused, msg)
	}
	return nil
}

// readTarget navigates a page to p.URL when given (waiting for the load,
// bounded), reads its rendered DOM in the guard's isolated world and
// returns the requested section of its text.
func (g *Guard) readTarget(ctx context.Context, targetID string, p readParams) (ReadResult, error) {
	if p.Offset < 0 || p.MaxChars < 0 {
		return ReadResult{}, fmt.Errorf("offset and maxChars must not be negative")
	}
	session := g.rd.session(targetID)
	if session == "" {
		return ReadResult{}, fmt.Errorf("the guard has no session on page %s", targetID)
	}
	var notes []string
	loaded := true
	if p.URL != "" {
		sc := g.scopes.OfTarget(targetID)
		if msg := g.readRefusal(sc.Key(), sc, p.URL); msg != "" {
			return ReadResult{}, fmt.Errorf("%w: %s", ErrReadRefused, msg)
		}
		var err error
		if loaded, err = g.navigateAndWait(ctx, session, p.URL); err != nil {
			return ReadResult{}, err
		}
		if !loaded {
			notes = append(notes, fmt.Sprintf("the page had not finished loading after %s; this is what had rendered by then.", g.readLoadTimeout()))
		}
	}
	if loaded { // a page that did not load in its bound gets no further wait
		if _, err := g.settle(ctx, session, p.URL != ""); err != nil {
			return ReadResult{}, err
		}
	}
	page, body, more, err := g.snapshot(ctx, session)
	if err != nil {
		return ReadResult{}, err
	}
	notes = append(notes, more...)
	if s := g.cfg.SearchURL; s != "" && strings.HasPrefix(page.URL, s) {
		notes = append(notes, searchNote)
	}
	sec, err := reader.Cut(reader.Compose(page.URL, page.Title, notes, body), p.Offset, p.MaxChars)
	if err != nil {
		return ReadResult{}, err
	}
	out := ReadResult{URL: page.URL, Title: page.Title, Text: sec.Text, Offset: sec.Offset, TotalChars: sec.TotalChars}
	if sec.NextOffset > 0 {
		next := sec.NextOffset
		out.NextOffset = &next
	}
	return out, nil
}

func (g *Guard) readLoadTimeout() time.Duration {
	if g.cfg.ReadLoadTimeout > 0 {
		return g.cfg.ReadLoadTimeout
	}
	return defaultReadLoadTimeout
}

// navigateAndWait navigates the page on the guard's session and waits until
// the new document's readyState is "complete", at most the load bound.
// loaded is false when the bound ran out first.
func (g *Guard) navigateAndWait(ctx context.Context, session, url string) (loaded bool, err error) {
	res, err := g.mux.Call(ctx, session, "Page.navigate", map[string]any{"url": url})
	if err != nil {
		return false, fmt.Errorf("navigate: %w", err)
	}
	var nav struct {
		LoaderID  string `json:"loaderId"`
		ErrorText string `json:"errorText"`
	}
	if err := jsonv2.Unmarshal(res, &nav); err != nil {
		return false, fmt.Errorf("navigate: %w", err)
	}
	if nav.ErrorText != "" {
		return false, fmt.Errorf("navigate to %s: %s", truncateReason(url), nav.ErrorText)
	}
	deadline := time.NewTimer(g.readLoadTimeout())
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		frame, err := mainFrame(ctx, g.mux, session)
		if err != nil {
			return false, err
		}
		if nav.LoaderID == "" || frame.LoaderID == nav.LoaderID {
			var state string
			if err := g.inWorld(ctx, session, frame.ID, "Runtime.evaluate", map[string]any{"expression": js.ReadyState}, &state); err == nil && state == "complete" {
				return true, nil
			}
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-deadline.C:
			return false, nil
		case <-tick.C:
		}
	}
}

type frameInfo struct {
	ID       string `json:"id"`
	LoaderID string `json:"loaderId"`
}

// mainFrame returns the page's main frame.
func mainFrame(ctx context.Context, mux *relay.Mux, session string) (frameInfo, error) {
	res, err := mux.Call(ctx, session, "Page.getFrameTree", nil)
	if err != nil {
		return frameInfo{}, fmt.Errorf("frame tree: %w", err)
	}
	var t struct {
		FrameTree struct {
			Frame frameInfo `json:"frame"`
		} `json:"frameTree"`
	}
	if err := jsonv2.Unmarshal(res, &t); err != nil {
		return frameInfo{}, fmt.Errorf("frame tree: %w", err)
	}
	return t.FrameTree.Frame, nil
}

// snapshot reads the page's final URL, title and rendered DOM (js/read.js)
// in the reader's isolated world, without what is not rendered. A page
// that renders no main text (a body hidden until a blocked script would
// show it) is read again with everything in its DOM, and noted.
func (g *Guard) snapshot(ctx context.Context, session string) (page reader.Page, body string, notes []string, err error) {
	frame, err := mainFrame(ctx, g.mux, session)
	if err != nil {
		return reader.Page{}, "", nil, err
	}
	for _, visibleOnly := range []bool{true, false} {
		var p struct {
			URL       string `json:"url"`
			Title     string `json:"title"`
			HTML      string `json:"html"`
			Truncated bool   `json:"truncated"`
		}
		if err := g.inWorld(ctx, session, frame.ID, "Runtime.callFunctionOn", map[string]any{
			"functionDeclaration": js.Read,
			"arguments":           []any{map[string]any{"value": visibleOnly}, map[string]any{"value": maxReadHTML}},
		}, &p); err != nil {
			return reader.Page{}, "", nil, err
		}
		if p.Truncated {
			notes = append(notes, fmt.Sprintf("the page is larger than %d million characters of HTML; only its first part was read.", maxReadHTML/1_000_000))
		}
		page = reader.Page{URL: p.URL, Title: p.Title, HTML: p.HTML}
		if body, err = reader.Extract(page); err != nil {
			return reader.Page{}, "", nil, err
		}
		if len(body) >= hiddenPageChars {
			if visibleOnly && len([]rune(body)) < sparseChars && webPage(p.URL) {
				notes = append(notes, fmt.Sprintf(sparseNote, len([]rune(body))))
			}
			break
		}
		if visibleOnly {
			if webPage(p.URL) {
				notes = append(notes, fmt.Sprintf(sparseNote, len([]rune(body))))
			}
			notes = append(notes, "the page shows almost no text; this is the text in its DOM, shown or not.")
		}
		if p.Truncated {
			break // too large to read twice
		}
	}
	return page, body, notes, nil
}

// maxReadHTML bounds the HTML the page script returns, in UTF-16 code
// units: a reply over the browser connection's message limit would end the
// connection for every user. JSON-escaped, 4 Mi units stay under 26 MB,
// and extraction stays around a second.
const maxReadHTML = 4 << 20

// hiddenPageChars is the least visible text under which a page is read
// again with its hidden text.
const hiddenPageChars = 100

// inWorld runs a Runtime method (evaluate or callFunctionOn) in the
// reader's isolated world of frameID (made on first use in each document)
// and decodes the value it returns into out. The world has its own,
// pristine DOM prototypes: the page's scripts cannot replace what the code
// calls.
func (g *Guard) inWorld(ctx context.Context, session, frameID, method string, params map[string]any, out any) error {
	res, err := g.mux.Call(ctx, session, "Page.createIsolatedWorld", map[string]any{"frameId": frameID, "worldName": g.rd.world})
	if err != nil {
		return fmt.Errorf("reader world: %w", err)
	}
	var w struct {
		ID int64 `json:"executionContextId"`
	}
	if err := jsonv2.Unmarshal(res, &w); err != nil {
		return fmt.Errorf("reader world: %w", err)
	}
	g.worlds.MadeIn("", frameID, w.ID)
	if method == "Runtime.evaluate" {
		params["contextId"] = w.ID
	} else {
		params["executionContextId"] = w.ID
	}
	params["returnByValue"] = true
	res, err = g.mux.Call(ctx, session, method, params)
	if err != nil {
		return fmt.Errorf("read the page: %w", err)
	}
	var r struct {
		Result struct {
			Value jsonv2.Value `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := jsonv2.Unmarshal(res, &r); err != nil {
		return fmt.Errorf("read the page: %w", err)
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("read the page: script failed: %s", r.ExceptionDetails.Text)
	}
	if err := jsonv2.Unmarshal(r.Result.Value, out); err != nil {
		return fmt.Errorf("read the page: %w", err)
	}
	return nil
}
