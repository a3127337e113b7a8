package cdpguard

import (
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/users"
	"github.com/cdpguard/cdpguard/internal/worlds"
)

func TestClickRefusal(t *testing.T) {
	for payload, want := range map[string]string{
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":true,"label":"Allow h for this session"}`: "",
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":null,"label":"Allow h for this session"}`: "", // no IntersectionObserver v2
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":true,"label":"Close"}`:                    "text was changed",
		`{"action":"allow","trusted":false,"active":true,"armed":true,"visible":true}`:                                   "not a trusted input event",
		`{"action":"allow","trusted":true,"active":false,"armed":true,"visible":true}`:                                   "no user activation",
		`{"action":"allow","trusted":true,"active":true,"armed":false,"visible":true}`:                                   "before it was shown",
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":false}`:                                   "covered",
		`{"action":"grant","trusted":true,"active":true,"armed":true}`:                                                   "unknown action",
		`{"action":"allow","trusted":true,"trusted":true}`:                                                               "unreadable", // duplicate keys
		`not json`: "unreadable",
	} {
		got := clickRefusal(payload, "Allow h for this session")
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("clickRefusal(%s) = %q, want %q", payload, got, want)
		}
	}
}

func TestWorldNameCommand(t *testing.T) {
	g := &Guard{worlds: worlds.New(worlds.Deps{})}
	reader := g.worlds.NewName("reader")
	g.ctl = &controls{binding: "cdpguard_0011", world: g.worlds.NewName("controls")}
	cases := []struct {
		method, params string
		refuse         bool
	}{
		{"Page.createIsolatedWorld", `{"frameId":"F","worldName":"` + reader + `"}`, true},
		{"Page.createIsolatedWorld", `{"frameId":"F","worldN\u0061me":"` + g.ctl.world + `"}`, true},
		{"Page.createIsolatedWorld", `{"frameId":"F","worldName":"cdpguard_guess"}`, true},
		{"Page.createIsolatedWorld", `{"frameId":"F","worldName":"__playwright_utility_world__"}`, false},
		{"Page.addScriptToEvaluateOnNewDocument", `{"source":"1","worldName":"` + g.ctl.world + `"}`, true},
		{"Page.addScriptToEvaluateOnNewDocument", `{"source":"1"}`, false},
		{"Runtime.addBinding", `{"name":"cdpguard_0011"}`, true},
		{"Runtime.addBinding", `{"name":"x","executionContextName":"` + g.ctl.world + `"}`, true},
		{"Runtime.addBinding", `{"name":"__playwright__binding__"}`, false},
		{"Runtime.removeBinding", `{"name":"cdpguard_0011"}`, true},
		{"Runtime.addBinding", `{"name":"a","name":"cdpguard_0011"}`, true}, // duplicate keys: unreadable
		{"Runtime.evaluate", `{"expression":"cdpguard_0011"}`, false},
	}
	for _, c := range cases {
		v := g.worldNameCommand(relay.Command{Method: c.method, Params: []byte(c.params)})
		if (v.Refuse != "") != c.refuse {
			t.Errorf("%s %s: refuse = %q, want refused %v", c.method, c.params, v.Refuse, c.refuse)
		}
	}
}

// TestDetachDebuggerCountsAsInput: detaching a session that had the
// debugger on resumes whatever it kept paused (a click handler held past
// the button's arming), so it starts the input quiet window like
// Debugger.disable; a session without the debugger changes nothing.
func TestDetachDebuggerCountsAsInput(t *testing.T) {
	g := &Guard{worlds: worlds.New(worlds.Deps{})}
	g.ctl = &controls{}
	st := &agentState{}
	st.setDebugger("S1", true)
	plain := g.agentWatch(st, relay.Command{Method: "Target.detachFromTarget", Params: []byte(`{"sessionId":"S2"}`)}, relay.Verdict{})
	if plain.OnReply != nil || g.ctl.input.Busy("", false, time.Now()) != "" {
		t.Fatal("detaching a session without the debugger counted as input")
	}
	v := g.agentWatch(st, relay.Command{Method: "Target.detachFromTarget", Params: []byte(`{"sessionId":"S1"}`)}, relay.Verdict{})
	if why := g.ctl.input.Busy("", false, time.Now()); !strings.Contains(why, "in flight") {
		t.Fatalf("detach with the debugger on is not in flight: %q", why)
	}
	if v.OnReply == nil {
		t.Fatal("no reply hook to end the detach")
	}
	v.OnReply([]byte(`{}`), nil)
	if why := g.ctl.input.Busy("", false, time.Now()); !strings.Contains(why, "before the click") {
		t.Errorf("no quiet window after the detach: %q", why)
	}
	if st.detachDebugger("S1") {
		t.Error("the detached session's debugger is still recorded")
	}
}

// TestQuietWindowScope: an agent's input counts only against its own
// user's buttons, a window move against everyone's (e2e
// TestRedTeamControls/other-window), and an Emulation.* layout change, which
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
		{"Emulation.setDeviceMetricsOverride", "bob", false},
		{"Emulation.setDeviceMetricsOverride", "alice", true},
		{"Target.activateTarget", "bob", true},
		{"Target.createTarget", "bob", true},
		{"Target.closeTarget", "bob", true},
		{"Page.bringToFront", "bob", true},
		{"Browser.setWindowBounds", "bob", true},
		{"Debugger.disable", "bob", false},
		{"Debugger.disable", "alice", true},
	} {
		g := &Guard{worlds: worlds.New(worlds.Deps{})}
		g.ctl = &controls{}
		st := &agentState{user: &users.User{Key: c.user}}
		v := g.agentWatch(st, relay.Command{Method: c.method, Params: []byte(`{}`)}, relay.Verdict{})
		if v.OnReply != nil {
			v.OnReply([]byte(`{}`), nil)
		}
		if got := g.ctl.input.Busy("alice", true, time.Now()) != ""; got != c.aliceBusy {
			t.Errorf("%s from %s: alice's button busy = %v, want %v", c.method, c.user, got, c.aliceBusy)
		}
		if g.ctl.input.Busy("", false, time.Now()) == "" {
			t.Errorf("%s from %s: a page of no user is not busy", c.method, c.user)
		}
	}
}

// TestWindowOpenedIsQuietEverywhere: a new page target (a popup a page
// opened after its own user's input) counts against every button.
func TestWindowOpenedIsQuietEverywhere(t *testing.T) {
	c := &controls{}
	c.windowOpened()
	if c.input.Busy("alice", true, time.Now()) == "" {
		t.Error("a new window did not start the quiet window for another user's button")
	}
}
