// Package quiet tracks the agent actions that could be mistaken for a
// human's click on the guard's "Allow" button, and says whether a click seen
// now must be refused. CDP input events are trusted by the page (isTrusted,
// user activation), so only the guard, which sees every agent command, can
// tell them from a human's; it refuses a click while such an action is in
// flight and for a quiet window after it.
//
// Actions are scoped (docs/decisions/2026-12-02-quiet-window.md): an
// agent's input and debugger reach only its own user's pages (users never
// share a renderer, and CDP input goes to one page's widget), so they count
// against that user's buttons only; an action that moves or raises windows
// changes what the human sees on the whole screen and counts against every
// button (scope Everywhere).
package quiet

import (
	"fmt"
	"sync"
	"time"
)

// Defaults of a Tracker.
const (
	// Window is how long after an action's reply a click still counts as
	// possibly the agent's.
	Window = time.Second
	// Stale bounds how long an action with no reply counts as in flight
	// (an agent that went away leaves its reply unread).
	Stale = 10 * time.Second
)

// Scope says which buttons an action can reach.
type Scope struct {
	everywhere bool
	user       string
}

// Everywhere is the scope of an action that moves or raises windows.
var Everywhere = Scope{everywhere: true}

// User is the scope of an action that reaches only user key's pages ("" is
// the shared fallback user, a user like any other).
func User(key string) Scope { return Scope{user: key} }

// Tracker follows agents' actions. Its zero value is ready to use.
type Tracker struct {
	mu       sync.Mutex
	next     uint64
	inflight map[uint64]entry
	last     map[Scope]time.Time // when the scope's last action was answered
}

type entry struct {
	at    time.Time
	scope Scope
}

// Begin records an action of scope about to reach the browser; done is
// called with its reply (once; later calls do nothing).
func (t *Tracker) Begin(scope Scope, now time.Time) (done func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inflight == nil {
		t.inflight = map[uint64]entry{}
		t.last = map[Scope]time.Time{}
	}
	t.next++
	id := t.next
	t.inflight[id] = entry{at: now, scope: scope}
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			delete(t.inflight, id)
			t.last[scope] = time.Now()
		})
	}
}

// Busy returns why a click seen now on a button of page owner may be an
// agent's, or "". known is false when the page belongs to no user (a
// human's own tab): then every action counts.
func (t *Tracker) Busy(owner string, known bool, now time.Time) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	reaches := func(s Scope) bool { return s.everywhere || !known || s.user == owner }
	n := 0
	for id, e := range t.inflight {
		if now.Sub(e.at) > Stale {
			delete(t.inflight, id)
			continue
		}
		if reaches(e.scope) {
			n++
		}
	}
	if n > 0 {
		return fmt.Sprintf("an agent's input command (Input.*, or one that moves or raises a window) was in flight (%d)", n)
	}
	var latest time.Time
	for s, at := range t.last {
		if now.Sub(at) >= Window {
			delete(t.last, s) // bounded: only the scopes active in the last window
			continue
		}
		if reaches(s) && at.After(latest) {
			latest = at
		}
	}
	if !latest.IsZero() {
		return fmt.Sprintf("an agent sent input (Input.*, or moved or raised a window) %v before the click; a human's click must come at least %v after any agent's", now.Sub(latest).Round(time.Millisecond), Window)
	}
	return ""
}
