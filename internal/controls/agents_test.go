package controls

import (
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/pages"
	"github.com/cdpguard/cdpguard/js"
)

// watch shows c an agent command as the guard does: by the controls
// column of the method's firewall row.
func watch(c *Controls, a Agent, user, method, session, params string) ReplyHook {
	rule, _ := firewall.Lookup(method, false)
	return c.AgentCommand(Command{Agent: a, User: user, Session: session, Params: []byte(params)}, rule.Controls)
}

// TestDetachDebuggerCountsAsInput: detaching a session that had the
// debugger on resumes whatever it kept paused (a click handler held past
// the button's arming), so it starts the input quiet window like
// Debugger.disable; a session without the debugger changes nothing.
func TestDetachDebuggerCountsAsInput(t *testing.T) {
	c := newTest(t)
	a := &fakeAgent{}
	watch(c, a, "", "Debugger.enable", "S1", `{}`)
	plain := watch(c, a, "", "Target.detachFromTarget", "", `{"sessionId":"S2"}`)
	if plain != nil || c.input.Busy("", false, time.Now()) != "" {
		t.Fatal("detaching a session without the debugger counted as input")
	}
	hook := watch(c, a, "", "Target.detachFromTarget", "", `{"sessionId":"S1"}`)
	if why := c.input.Busy("", false, time.Now()); !strings.Contains(why, "in flight") {
		t.Fatalf("detach with the debugger on is not in flight: %q", why)
	}
	if hook == nil {
		t.Fatal("no reply hook to end the detach")
	}
	hook([]byte(`{}`), nil)
	if why := c.input.Busy("", false, time.Now()); !strings.Contains(why, "before the click") {
		t.Errorf("no quiet window after the detach: %q", why)
	}
	if c.dbg.detach(c.sessionPage(a, "S1"), a, "S1") {
		t.Error("the detached session's debugger is still recorded")
	}
}

// TestQuietWindowScope: an agent's input counts only against its own
// user's buttons, a window move against everyone's (e2e
// TestTimed/RedTeamControls/other-window), and an Emulation.* layout change, which
// stays in the agent's own page, like input.
func TestQuietWindowScope(t *testing.T) {
	for _, c := range []struct {
		method    string
		user      string
		aliceBusy bool
	}{
		{"Input.dispatchMouseEvent", "bob", false},
		{"Input.dispatchMouseEvent", "alice", true},
		{"Input.dispatchKeyEvent", "bob", false},
		{"Input.dispatchDragEvent", "alice", true},
		{"Emulation.setDeviceMetricsOverride", "bob", false},
		{"Emulation.setDeviceMetricsOverride", "alice", true},
		{"Emulation.setVisibleSize", "alice", true},
		{"Emulation.setPageScaleFactor", "alice", true},
		{"Target.activateTarget", "bob", true},
		{"Target.createTarget", "bob", true},
		{"Target.closeTarget", "bob", true},
		{"Page.bringToFront", "bob", true},
		{"Page.close", "bob", true},
		{"Browser.setWindowBounds", "bob", true},
		{"Debugger.disable", "bob", false},
		{"Debugger.disable", "alice", true},
	} {
		ctl := newTest(t)
		if hook := watch(ctl, &fakeAgent{}, c.user, c.method, "S1", `{}`); hook != nil {
			hook([]byte(`{}`), nil)
		}
		if got := ctl.input.Busy("alice", true, time.Now()) != ""; got != c.aliceBusy {
			t.Errorf("%s from %s: alice's button busy = %v, want %v", c.method, c.user, got, c.aliceBusy)
		}
		if ctl.input.Busy("", false, time.Now()) == "" {
			t.Errorf("%s from %s: a page of no user is not busy", c.method, c.user)
		}
	}
	ctl := newTest(t)
	for _, m := range []string{"Runtime.evaluate", "Page.navigate", "DOM.getDocument"} {
		if hook := watch(ctl, &fakeAgent{}, "alice", m, "S1", `{}`); hook != nil {
			t.Errorf("%s: a reply hook for a command that is no input", m)
		}
	}
	if why := ctl.input.Busy("", false, time.Now()); why != "" {
		t.Errorf("commands that are no input made the button busy: %q", why)
	}
}

// TestWindowOpenedIsQuietEverywhere: a new page target (a popup a page
// opened after its own user's input) counts against every button.
func TestWindowOpenedIsQuietEverywhere(t *testing.T) {
	c := newTest(t)
	c.WindowOpened()
	if c.input.Busy("alice", true, time.Now()) == "" {
		t.Error("a new window did not start the quiet window for another user's button")
	}
}

// TestDebuggerBlocksOwnUser: an agent's debugger blocks grants on its own
// user's pages (and on pages of no user) while its session lives; another
// user's page is not blocked; when the agent goes, the quiet window starts.
func TestDebuggerBlocksOwnUser(t *testing.T) {
	c := newTest(t)
	a := &fakeAgent{owned: map[string]bool{"S1": true}}
	watch(c, a, "alice", "Debugger.enable", "S1", `{}`)
	if c.dbg.debugging("alice", true) == "" || c.dbg.debugging("", false) == "" {
		t.Error("the debugger on does not block alice's grants")
	}
	if why := c.dbg.debugging("bob", true); why != "" {
		t.Errorf("alice's debugger blocks bob's grants: %q", why)
	}
	a.owned["S1"] = false // detached: its debugger went with it
	if why := c.dbg.debugging("alice", true); why != "" {
		t.Errorf("a detached session's debugger still counts: %q", why)
	}
	a.owned["S1"] = true
	c.AgentGone(a)
	if c.dbg.debugging("alice", true) != "" {
		t.Error("a gone agent's debugger still counts")
	}
	if c.input.Busy("alice", true, time.Now()) == "" {
		t.Error("an agent gone with the debugger on did not start the quiet window")
	}
}

// TestDebuggerEndsWithPage: the debugger of an agent's session the relay
// places is a record on the session's page, ended with it (the session
// ends with its page); the agent's record, and a debugger on a session
// no page holds, end with the agent.
func TestDebuggerEndsWithPage(t *testing.T) {
	c := newTest(t)
	c.d.Pages.(*pages.Registry).Track("T", "C")
	a := &fakeAgent{owned: map[string]bool{"S1": true, "P": true}, targets: map[string]string{"S1": "T"}}
	watch(c, a, "alice", "Debugger.enable", "S1", `{}`)
	pg := c.d.Pages.Page("T")
	if rec, ok := c.dbg.on.Get(pg); !ok || len(rec.on) != 1 || c.dbg.debugging("alice", true) == "" {
		t.Fatal("the debugger on a session of page T is not recorded on T")
	}
	c.d.Pages.(*pages.Registry).Destroyed("T")
	if _, ok := c.dbg.on.Get(pg); ok || c.dbg.debugging("alice", true) != "" {
		t.Fatal("the debugger of a session of an ended page still counts")
	}
	watch(c, a, "alice", "Debugger.enable", "P", `{}`) // a page connection's own session
	if c.dbg.debugging("alice", true) == "" {
		t.Fatal("the debugger on a session no page holds does not count")
	}
	if user, on := c.dbg.gone(a); user != "alice" || !on || c.dbg.debugging("alice", true) != "" {
		t.Errorf("the agent's end: user %q, on %v; its debugger still counts: %q", user, on, c.dbg.debugging("alice", true))
	}
}

// TestRefusal: with the controls on, breakpoint conditions and live edits
// are refused; plain breakpoints pass; with the controls off nothing is.
func TestRefusal(t *testing.T) {
	c := newTest(t)
	for _, tc := range []struct {
		method, params string
		refuse         bool
	}{
		{"Debugger.setBreakpointByUrl", `{"lineNumber":1,"condition":"x()"}`, true},
		{"Debugger.setBreakpoint", `{"location":{"scriptId":"3"},"condition":"x()"}`, true},
		{"Debugger.setBreakpointOnFunctionCall", `{"objectId":"1.2.3","condition":"x()"}`, true},
		{"Debugger.setBreakpointByUrl", `{"lineNumber":1}`, false},
		{"Debugger.setBreakpointByUrl", `{"lineNumber":1,"condition":"a","condition":"b"}`, true}, // duplicate keys: unreadable
		{"Debugger.setScriptSource", `{"scriptId":"3","scriptSource":"x"}`, true},
	} {
		rule, _ := firewall.Lookup(tc.method, false)
		if rule.Action != firewall.Controls {
			t.Errorf("%s: firewall row %v, want Controls", tc.method, rule.Action)
		}
		if got := c.Refusal(rule.Controls, []byte(tc.params)) != ""; got != tc.refuse {
			t.Errorf("%s %s: refused %v, want %v", tc.method, tc.params, got, tc.refuse)
		}
		var off *Controls
		if why := off.Refusal(rule.Controls, []byte(tc.params)); why != "" {
			t.Errorf("%s with the controls off: refused %q", tc.method, why)
		}
	}
}

// TestScrubGuardScript: the guard's own scripts are never handed to an
// agent's Debugger.getScriptSource, with the controls on or off.
func TestScrubGuardScript(t *testing.T) {
	var off *Controls
	hook := watch(off, &fakeAgent{}, "", "Debugger.getScriptSource", "S1", `{"scriptId":"3"}`)
	if hook == nil {
		t.Fatal("no reply hook for Debugger.getScriptSource with the controls off")
	}
	if _, errRaw := hook([]byte(`{"scriptSource":"let a = 1"}`), nil); errRaw != nil {
		t.Errorf("a page's script refused: %s", errRaw)
	}
	res := marshal(t, map[string]string{"scriptSource": "(x)" + js.Controls})
	if _, errRaw := hook(res, nil); errRaw == nil || !strings.Contains(string(errRaw), "cdpguard") {
		t.Errorf("the controls' script handed out: %s", errRaw)
	}
}
