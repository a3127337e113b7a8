package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
)

// consoleKeep bounds the console messages kept per tab.
const consoleKeep = 200

// user is one user's browser as the tools see it: an in-process agent
// connection to the guard, the selected tab and the last snapshot's refs.
// Its tool calls run one at a time (sem).
type user struct {
	key string
	srv *Server
	sem chan struct{} // one tool call at a time

	// The fields below are used by the call holding sem, except where noted.
	pipe     *Pipe
	released <-chan struct{} // closed once the guard let go of pipe's agent
	cur      *tab
	// tabs holds the tools' record of each tab: the attached ones, and
	// those the tools closed for a dialog loop (tab.loopClosed) until
	// Chrome stops listing them.
	tabs      map[target.ID]*tab
	snap      *snapshot   // refs of the last snapshot
	order     []target.ID // tab order shown to the model
	retired   bool        // swept: calls look the user up again
	curID     target.ID   // the current tab, kept across reconnects
	idleSince time.Time   // set when the sweep let this user go idle: the next connect says what happened
	doing     string      // what the call is waiting for, for its timeout error
	hint      string      // what the model may do after that timeout

	mu      sync.Mutex // guards the fields below and every tab's console
	notes   []string   // things to tell the model with the next result (dialogs)
	lastUse time.Time
	evPipe  *Pipe        // the pipe events arrive on
	evTabs  []*tab       // the attached tabs, for events
	blocks  []blockEntry // the guard's blocks of this user's requests (last netKeep)
	blockN  int          // blocks recorded so far (blockEntry.seq of the last)
	popups  []target.ID  // page targets created meanwhile, for the next result
	front   target.ID    // the tab last brought to the front

	callStop context.CancelCauseFunc // ends the running call (a dialog opened)
	callName string
	ended    *dialogOpened // the dialog that ended the running call; a loop's closing wins (endCall takes it)
}

type tab struct {
	id target.ID // also the main frame's id
	s  Session
	// Guarded by user.mu:
	console    []consoleLine
	net        []netEntry // this tab's requests (last netKeep)
	netSeq     int        // the number of the tab's last request (browser_network_request's index)
	gen        int        // main-frame documents committed (Page.frameNavigated): what "since the last navigation" counts
	blockMark  int        // user.blockN at the last commit: the blocks listed since the last navigation come after it
	dlg        *openDialog
	streak     int       // dialogs in a row (see maxDialogStreak)
	lastDialog time.Time // when the last dialog opened or closed
	// detached: the browser detached the tab's session (the tab closed),
	// or the tools closed it for a dialog loop; the next call forgets it.
	detached bool
	// loopClosed: the tools closed the tab for a dialog loop. The close is
	// asynchronous and a page looping on dialogs may take a while to go,
	// so its record stays in user.tabs until Chrome stops listing it: the
	// tools never pick such a tab again and answer its dialogs.
	loopClosed bool
	// Used by the call holding the user's sem:
	media map[string]string // browser_emulate_media's overrides (feature or "media" to value)
}

// frame is the id of t's main frame, which is its target's id.
func (t *tab) frame() cdp.FrameID { return cdp.FrameID(t.id) }

// consoleLine is one console message of a tab.
type consoleLine struct {
	gen   int    // tab.gen when it was logged
	level string // error, warning, info or debug
	text  string
}

func newUser(srv *Server, key string) *user {
	return &user{key: key, srv: srv, sem: make(chan struct{}, 1), tabs: map[target.ID]*tab{}, lastUse: time.Now()}
}

// lock waits for the user's previous call to end.
func (u *user) lock(ctx context.Context) error {
	select {
	case u.sem <- struct{}{}:
		u.touch()
		return nil
	case <-ctx.Done():
		return fmt.Errorf("another browser tool call of this user is still running: %w", ctx.Err())
	}
}

func (u *user) unlock() {
	u.touch()
	<-u.sem
}

func (u *user) touch() {
	u.mu.Lock()
	u.lastUse = time.Now()
	u.mu.Unlock()
}

// maxNotes bounds what a page can queue for the next result (a page may
// open a dialog every few milliseconds).
const maxNotes = 20

func (u *user) note(s string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.noteLocked(s)
}

// noteLocked is note for a caller that holds u.mu.
func (u *user) noteLocked(s string) {
	switch {
	case len(u.notes) < maxNotes:
		u.notes = append(u.notes, s)
	case len(u.notes) == maxNotes:
		u.notes = append(u.notes, "(the page opened more dialogs; they were answered the same way)")
	}
}

func (u *user) takeNotes() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := u.notes
	u.notes = nil
	return n
}

// connect opens the agent connection when there is none. A connection the
// guard closed is reported once (browser restart, shutdown); the next call
// opens a fresh one.
func (u *user) connect(ctx context.Context) error {
	if u.pipe != nil {
		select {
		case <-u.pipe.Done():
			err := u.pipe.Call(ctx, "", "Target.getTargets", nil, nil) // ErrClosed with the reason
			u.reset()
			return err
		default:
			return nil
		}
	}
	if !u.idleSince.IsZero() && u.srv.opts.HasState != nil && !u.srv.opts.HasState(u.key) {
		u.note(fmt.Sprintf("Note: this user's browser state (tabs, cookies, storage) was cleared: it was idle since %s, longer than the guard's --session-idle. The browser starts afresh.", u.idleSince.UTC().Format("15:04:05 UTC")))
	}
	u.idleSince = time.Time{}
	p := NewPipe(u.onEvent)
	released, err := u.srv.opts.Backend.Open(ctx, u.key, p)
	if err != nil {
		p.Close()
		return fmt.Errorf("cannot reach the browser: %w", err)
	}
	u.pipe, u.released = p, released
	u.mu.Lock()
	u.evPipe = p
	u.mu.Unlock()
	// The guard's blocks of this user's requests (browser_network_requests,
	// a blocked navigation of a click), and new tabs (popups).
	if err := p.Call(ctx, "", "Guard.enable", nil, nil); err != nil {
		return fmt.Errorf("enable the guard events: %w", err)
	}
	if err := p.Call(ctx, "", target.CommandSetDiscoverTargets, &target.SetDiscoverTargetsParams{Discover: true}, nil); err != nil {
		return fmt.Errorf("discover targets: %w", err)
	}
	return nil
}

// reset forgets the connection and everything tied to it.
func (u *user) reset() {
	if u.pipe != nil {
		u.pipe.Close()
	}
	if u.cur != nil {
		u.curID = u.cur.id
	}
	u.pipe, u.cur, u.snap = nil, nil, nil
	u.mu.Lock()
	for id, t := range u.tabs {
		if !t.loopClosed { // a tab closed for a dialog loop stays unpicked
			delete(u.tabs, id)
		}
	}
	u.evPipe, u.evTabs, u.popups = nil, nil, nil
	u.mu.Unlock()
}

// disconnect closes the connection and waits (bounded) until the guard has
// released it.
func (u *user) disconnect() {
	rel := u.released
	u.reset()
	if rel != nil {
		select {
		case <-rel:
		case <-time.After(5 * time.Second):
		}
	}
	u.released = nil
}

// onEvent runs on the guard's writer for this agent: it must not block. ev
// is the event decoded once by the pipe (decodeEvent); the tools keep what
// they need of the events of their tabs and of the new targets.
func (u *user) onEvent(session target.SessionID, ev any) {
	switch ev := ev.(type) {
	case *target.EventDetachedFromTarget:
		u.detached(ev.SessionID)
	case *target.EventTargetCreated:
		u.targetCreated(ev)
	case *page.EventJavascriptDialogOpening:
		u.dialogOpening(session, ev)
	case *page.EventJavascriptDialogClosed:
		u.dialogClosed(session, ev)
	case *blockEntry:
		u.blocked(ev)
	case *network.EventRequestWillBeSent, *network.EventResponseReceived, *network.EventLoadingFailed, *page.EventFrameNavigated:
		u.network(session, ev)
	case *runtime.EventConsoleAPICalled:
		parts := make([]string, 0, len(ev.Args))
		for _, a := range ev.Args {
			parts = append(parts, remoteText(a))
		}
		u.logConsole(session, consoleLevel(string(ev.Type)), fmt.Sprintf("[%s] %s", ev.Type, clip(strings.Join(parts, " "), 2000)))
	case *runtime.EventExceptionThrown:
		if ev.ExceptionDetails == nil {
			return
		}
		msg := ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil && ev.ExceptionDetails.Exception.Description != "" {
			msg = ev.ExceptionDetails.Exception.Description
		}
		u.logConsole(session, "error", "[error] "+clip(msg, 2000))
	}
}

// detached records that the browser detached a tab's session (the tab
// closed): the next call forgets the tab. A session of no attached tab is
// none of the tools' (or one whose attach is still enabling domains on it,
// which then fails and forgets the tab).
func (u *user) detached(session target.SessionID) {
	if session == "" {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if t := u.tabOfSession(session); t != nil {
		t.detached = true
	}
}

func (u *user) logConsole(session target.SessionID, level, line string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, t := range u.evTabs {
		if t.s.ID == session {
			t.console = append(t.console, consoleLine{gen: t.gen, level: level, text: line})
			if len(t.console) > consoleKeep {
				t.console = t.console[len(t.console)-consoleKeep:]
			}
			return
		}
	}
}

func remoteText(a *runtime.RemoteObject) string {
	if a == nil {
		return ""
	}
	if len(a.Value) > 0 {
		var s string
		if jsonv2.Unmarshal(a.Value, &s, browserJSON) == nil {
			return s
		}
		return string(a.Value)
	}
	if a.Description != "" {
		return a.Description
	}
	return string(a.Type)
}

// pages lists the user's page targets, as the guard filters them.
func (u *user) pages(ctx context.Context) ([]*target.Info, error) {
	res, err := cdp.Call(ctx, Session{p: u.pipe}, target.GetTargets, target.GetTargetsParams{})
	if err != nil {
		return nil, err
	}
	// Chrome lists recently active tabs first; the model needs indices
	// that stay put, so tabs keep the order they were first seen in.
	rank := map[target.ID]int{}
	for i, id := range u.order {
		rank[id] = i
	}
	closed := map[target.ID]bool{}
	var ended []target.ID
	u.mu.Lock()
	for id, t := range u.tabs {
		if !t.loopClosed {
			continue
		}
		if slices.ContainsFunc(res.TargetInfos, func(t *target.Info) bool { return t.TargetID == id }) {
			closed[id] = true
		} else { // Chrome no longer lists it: gone, and forgotten as any tab
			t.loopClosed = false
			ended = append(ended, id)
		}
	}
	u.mu.Unlock()
	// forget, not a bare delete: the tab may still be the current one (a
	// dialog's answer selects its tab) and in evTabs, and a current tab
	// whose record is gone was used by the next call with its ended
	// session (MCPModelTasks after dialogLoop, 2026-12-07).
	for _, id := range ended {
		u.forget(id)
	}
	var out []*target.Info
	for i := len(res.TargetInfos) - 1; i >= 0; i-- {
		t := res.TargetInfos[i]
		if t.Type != "page" || closed[t.TargetID] {
			continue
		}
		if _, ok := rank[t.TargetID]; !ok {
			rank[t.TargetID] = len(u.order)
			u.order = append(u.order, t.TargetID)
		}
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool { return rank[out[i].TargetID] < rank[out[j].TargetID] })
	live := u.order[:0]
	for _, id := range u.order {
		for _, t := range out {
			if t.TargetID == id {
				live = append(live, id)
				break
			}
		}
	}
	u.order = live
	return out, nil
}

// page returns the selected tab, attaching to the user's first tab or
// (with create) opening one when none is selected.
func (u *user) page(ctx context.Context, create bool) (*tab, error) {
	if err := u.connect(ctx); err != nil {
		return nil, err
	}
	var gone []*tab
	u.mu.Lock()
	for _, t := range u.tabs {
		if t.detached {
			gone = append(gone, t)
		}
	}
	if u.cur != nil && u.cur.detached && u.tabs[u.cur.id] != u.cur {
		gone = append(gone, u.cur) // current, with no record left: never used again
	}
	u.mu.Unlock()
	for _, t := range gone {
		u.forget(t.id)
	}
	if u.cur == nil {
		ps, err := u.pages(ctx)
		if err != nil {
			return nil, err
		}
		ids := make([]target.ID, 0, len(ps)+1)
		if hasTarget(ps, u.curID) {
			ids = append(ids, u.curID) // the tab of the last call, after a reconnect
		}
		for _, p := range ps {
			ids = append(ids, p.TargetID)
		}
		var lastErr error
		for _, id := range ids {
			// A tab being closed (a dialog loop's, say) may still be
			// listed: try the next one.
			if _, lastErr = u.attach(ctx, id); lastErr == nil || ctx.Err() != nil {
				break
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if u.cur == nil && lastErr != nil && !create {
			return nil, lastErr
		}
	}
	if u.cur != nil {
		if d := u.openDialogOf(u.cur); d != nil {
			return nil, &DialogOpenError{D: d.info}
		}
		// Chrome throttles a background tab: the tab acted on comes to
		// the front first.
		if err := u.frontTab(ctx, u.cur); err != nil {
			return nil, err
		}
		return u.cur, nil
	}
	if !create {
		return nil, errors.New("no tab is open; call browser_navigate (or browser_read with url) first")
	}
	t, err := u.newTab(ctx)
	if err != nil {
		return nil, err
	}
	// The new tab is the one the call acts on: a dialog its page opens
	// (an alert while the first navigation loads) ends the call and waits
	// for browser_handle_dialog, rather than counting as a background
	// tab's while the call runs to its bound.
	if err := u.frontTab(ctx, t); err != nil {
		return nil, err
	}
	return t, nil
}

func (u *user) newTab(ctx context.Context) (*tab, error) {
	res, err := cdp.Call(ctx, Session{p: u.pipe}, target.CreateTarget, target.CreateTargetParams{URL: "about:blank"})
	if err != nil {
		return nil, fmt.Errorf("open a tab: %w", err)
	}
	return u.attach(ctx, res.TargetID)
}

// attach selects target id, attaching to it first when needed.
func (u *user) attach(ctx context.Context, id target.ID) (*tab, error) {
	if t := u.tabs[id]; t != nil && !u.closedForLoop(t) {
		u.cur = t
		return t, nil
	}
	res, err := cdp.Call(ctx, Session{p: u.pipe}, target.AttachToTarget, target.AttachToTargetParams{TargetID: id, Flatten: ptr(true)})
	if err != nil {
		return nil, fmt.Errorf("attach to the tab: %w", err)
	}
	t := &tab{id: id, s: Session{p: u.pipe, ID: res.SessionID}}
	u.seen(id)
	u.mu.Lock()
	u.evTabs = append(u.evTabs, t)
	u.mu.Unlock()
	// Page events make the guard's dialog handler hold this tab's dialogs
	// for browser_handle_dialog (Options.DialogWait); Network events feed
	// browser_network_requests.
	for _, m := range []string{page.CommandEnable, runtime.CommandEnable, "Network.enable"} {
		if err := t.s.Call(ctx, m, nil, nil); err != nil {
			u.forget(id)
			return nil, fmt.Errorf("%s: %w", m, err)
		}
	}
	u.mu.Lock()
	u.tabs[id] = t
	u.mu.Unlock()
	u.cur = t
	return t, nil
}

// closedForLoop reports whether the tools closed t for a dialog loop.
func (u *user) closedForLoop(t *tab) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return t.loopClosed
}

// forget drops a tab that was closed; one closed for a dialog loop keeps
// its record (loopClosed) until Chrome stops listing it.
func (u *user) forget(id target.ID) {
	if u.cur != nil && u.cur.id == id {
		u.cur = nil
	}
	if u.snap != nil && u.snap.target == id {
		u.snap = nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	t := u.tabs[id]
	for i, x := range u.evTabs {
		if x.id == id {
			t = x // the record of an attach under way is not in tabs yet
			u.evTabs = append(u.evTabs[:i], u.evTabs[i+1:]...)
			break
		}
	}
	if t != nil && t.loopClosed {
		u.tabs[id] = t
	} else {
		delete(u.tabs, id)
	}
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
