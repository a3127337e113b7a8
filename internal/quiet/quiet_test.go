package quiet

import (
	"strings"
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	var tr Tracker
	t0 := time.Now()
	if why := tr.Busy("alice", true, t0); why != "" {
		t.Fatalf("no input yet, busy: %s", why)
	}
	done := tr.Begin(User("alice"), t0)
	if why := tr.Busy("alice", true, t0.Add(time.Second)); !strings.Contains(why, "in flight") {
		t.Errorf("input in flight: busy = %q", why)
	}
	done()
	done()
	if why := tr.Busy("alice", true, time.Now()); !strings.Contains(why, "before the click") {
		t.Errorf("input just answered: busy = %q", why)
	}
	if why := tr.Busy("alice", true, time.Now().Add(Window+time.Millisecond)); why != "" {
		t.Errorf("input answered long ago: busy = %q", why)
	}
	if len(tr.last) != 0 {
		t.Errorf("scopes kept past their window: %v", tr.last)
	}
	tr.Begin(User("alice"), t0) // never answered (its agent went away)
	if why := tr.Busy("alice", true, t0.Add(Stale+time.Second)); why != "" {
		t.Errorf("a stale entry still counts: %q", why)
	}
}

// TestScope: another user's input or debugger does not block a grant;
// the same user's does, and so does anything that moves or raises windows;
// a page of no user counts everything.
func TestScope(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name  string
		scope Scope
		owner string
		known bool
		busy  bool
	}{
		{"another user's input", User("bob"), "alice", true, false},
		{"the same user's input", User("alice"), "alice", true, true},
		{"the fallback user's input on a named user's page", User(""), "alice", true, false},
		{"the fallback user's input on its own page", User(""), "", true, true},
		{"another user's window move", Everywhere, "alice", true, true},
		{"another user's input on a page of no user", User("bob"), "", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tr Tracker
			done := tr.Begin(c.scope, now)
			if got := tr.Busy(c.owner, c.known, now) != ""; got != c.busy {
				t.Errorf("in flight: busy = %v, want %v", got, c.busy)
			}
			done()
			if got := tr.Busy(c.owner, c.known, time.Now()) != ""; got != c.busy {
				t.Errorf("in the quiet window: busy = %v, want %v", got, c.busy)
			}
		})
	}
}
