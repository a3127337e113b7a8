package cdpguard

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/quiet"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/js"
)

// windowCommands change which page is in front or where the button is on
// the screen without any input, so a human's click right after one may
// land on a button the human never saw: they count as input. (e2e
// TestRedTeamControls/other-window: an agent raised a window it had kept
// behind another until the button was armed; the page saw neither a focus
// nor a visibility change.) true: the command opens, closes, raises or
// moves a window, which can cover or reveal any user's button, so it
// counts everywhere; false: it changes the layout of the agent's own page
// only, like input (internal/quiet).
var windowCommands = map[string]bool{
	"Target.activateTarget":              true,
	"Target.createTarget":                true,
	"Target.closeTarget":                 true,
	"Page.bringToFront":                  true,
	"Page.close":                         true,
	"Browser.setWindowBounds":            true,
	"Emulation.setDeviceMetricsOverride": false,
	"Emulation.setVisibleSize":           false,
	"Emulation.setPageScaleFactor":       false,
}

// windowOpened starts the quiet window everywhere when any page target
// appears: a new tab or popup can cover or reveal any user's button, and a
// page's own window.open (after its agent's input, which counts only
// against its own user) is seen by no agent command.
func (c *controls) windowOpened() {
	c.input.Begin(quiet.Everywhere, time.Now())()
}

// userScope is the quiet-window scope of an agent's own input and
// debugger: its user's pages.
func (st *agentState) userScope() quiet.Scope {
	if st.user == nil {
		return quiet.Everywhere
	}
	return quiet.User(st.user.Key)
}

// agentWatch follows the agent commands a grant depends on, once they are
// about to reach the browser: Input.* until its reply (see
// agentInputQuiet), Debugger.enable/disable (a breakpoint's condition runs
// in the frame it pauses, so an agent with the debugger on can run code in
// the controls world), and it scrubs the guard's own scripts from
// Debugger.getScriptSource replies.
func (g *Guard) agentWatch(st *agentState, cmd relay.Command, v relay.Verdict) relay.Verdict {
	if v.Refuse != "" || v.Local != nil {
		return v
	}
	switch cmd.Method {
	case "Debugger.enable", "Debugger.disable":
		st.setDebugger(cmd.SessionID, cmd.Method == "Debugger.enable")
		if cmd.Method == "Debugger.disable" && g.ctl != nil {
			// A handler the agent kept paused runs on now: as right
			// after input (e2e TestRedTeamControls/debugger-pause).
			g.ctl.input.Begin(st.userScope(), time.Now())()
		}
		return v
	case "Debugger.getScriptSource":
		return relay.Combine(relay.Verdict{OnReply: scrubGuardScript}, v)
	case "Target.detachFromTarget":
		// Detaching a session with the debugger on resumes what it kept
		// paused, like Debugger.disable: the quiet window starts at the
		// reply (e2e TestRedTeamControls/debugger-pause ended by disable).
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if g.ctl != nil && unmarshalParams(cmd.Params, &p) == nil && st.detachDebugger(p.SessionID) {
			done := g.ctl.input.Begin(st.userScope(), time.Now())
			return relay.Combine(relay.Verdict{OnReply: func(result, errRaw []byte) ([]byte, []byte) {
				done()
				return result, errRaw
			}}, v)
		}
		return v
	}
	everywhere, window := windowCommands[cmd.Method]
	if g.ctl == nil || !(strings.HasPrefix(cmd.Method, "Input.") || window) {
		return v
	}
	scope := st.userScope()
	if everywhere {
		scope = quiet.Everywhere
	}
	done := g.ctl.input.Begin(scope, time.Now())
	return relay.Combine(relay.Verdict{OnReply: func(result, errRaw []byte) ([]byte, []byte) {
		done()
		return result, errRaw
	}}, v)
}

// allowClick is what js/controls.js reports about a click on "Allow".
type allowClick struct {
	Action  string `json:"action"`
	Label   string `json:"label"`
	Trusted bool   `json:"trusted"`
	Active  bool   `json:"active"`
	Armed   bool   `json:"armed"`
	Visible *bool  `json:"visible"`
}

// bindingCalled takes Runtime.bindingCalled on the guard's page session
// (read loop; never blocks). A call is honoured only when every check
// passes; the host granted is the guard's own record of the explained
// block, whatever the payload says.
func (c *controls) bindingCalled(session string, params []byte) {
	var p struct {
		Name      string `json:"name"`
		Payload   string `json:"payload"`
		ContextID int64  `json:"executionContextId"`
	}
	if jsonv2.Unmarshal(params, &p) != nil || p.Name != c.binding {
		return
	}
	now := time.Now()
	c.mu.Lock()
	target := c.sessions[session]
	pg := c.pages[target]
	var why string
	var x *explained
	switch {
	case pg == nil:
		why = "not a page the guard set up"
	case p.ContextID == 0 || p.ContextID != pg.ctxID:
		why = fmt.Sprintf("execution context %d is not the guard's controls world of the page's main frame", p.ContextID)
	case c.taint.refusal(target, p.ContextID) != "":
		why = c.taint.refusal(target, p.ContextID)
	case pg.explain == nil || !pg.explain.committed:
		why = "the page is not the explanation page of a blocked navigation"
	case pg.explain.granted || pg.explain.busy:
		why = "already granted"
	default:
		x = pg.explain
	}
	if why == "" {
		why = clickRefusal(p.Payload, allowLabel(x.host))
	}
	if why == "" {
		// Only what can reach this page's button counts: its user's input
		// and debugger, and anyone's window moves (internal/quiet). Lock
		// order: c.mu, then the users registry's and g.agents.mu (leaves).
		owner, known := c.g.users.OwnerKey(target)
		why = c.input.Busy(owner, known, now)
		if why == "" {
			why = c.g.agentDebugging(owner, known)
		}
	}
	if why != "" {
		if x != nil {
			x.refused++
		}
		level := slog.LevelWarn
		if pg != nil {
			if now.Sub(pg.lastRefusal) < time.Second {
				level = slog.LevelDebug // a loop of forged calls logs once a second
			} else {
				pg.lastRefusal = now
			}
		}
		c.mu.Unlock()
		c.g.log.Log(context.Background(), level, "controls: grant refused", "target", target, "why", why)
		if pg != nil {
			c.noteOn(target, "Not allowed: "+why)
		}
		return
	}
	x.busy = true
	c.mu.Unlock()
	c.g.wg.Add(1)
	go func() { // ends with the grant and the reload (bounded)
		defer c.g.wg.Done()
		c.grant(target, session, x)
	}()
}

// allowLabel is the Allow button's text (js/controls.js draws the same).
func allowLabel(host string) string { return "Allow " + host + " for this session" }

// clickRefusal returns why the world's report of a click does not show a
// human's decision, or "". label is what the button must have said: an
// agent can rewrite its text through the DOM domain, so the world reports
// the text it saw at the click.
func clickRefusal(payload, label string) string {
	var a allowClick
	if err := jsonv2.Unmarshal([]byte(payload), &a); err != nil {
		return "unreadable report from the controls world"
	}
	switch {
	case a.Action != "allow":
		return fmt.Sprintf("unknown action %q", a.Action)
	case !a.Trusted:
		return "the click was not a trusted input event (a script's click)"
	case !a.Active:
		return "the click came with no user activation"
	case !a.Armed:
		return "the button was clicked before it was shown long enough to be read"
	case a.Visible != nil && !*a.Visible:
		return "the button was covered or not fully visible when clicked"
	case a.Label != label:
		return fmt.Sprintf("the button's text was changed (%q)", truncateReason(a.Label))
	}
	return ""
}

// grant grants the explained host to the page's user for this session and
// opens the blocked URL again.
func (c *controls) grant(target, session string, x *explained) {
	user, err := c.g.scopes.Grant(target, x.host, "controls")
	c.mu.Lock()
	x.busy = false
	if err == nil {
		x.granted = true
	} else {
		x.refused++
	}
	c.mu.Unlock()
	if err != nil {
		c.g.log.Warn("controls: grant refused", "target", target, "host", x.host, "why", err)
		c.noteOn(target, "Not allowed: "+err.Error())
		return
	}
	c.g.log.Info("controls: host allowed by a human click", "target", target, "host", x.host, "user", user)
	c.noteOn(target, "")
	ctx, cancel := context.WithTimeout(c.g.ctx, 5*time.Second)
	defer cancel()
	if _, err := c.g.mux.Call(ctx, session, "Page.navigate", map[string]any{"url": x.url}); err != nil {
		c.g.log.Debug("controls: reload after grant failed", "target", target, "err", err)
	}
}

// setDebugger records whether the agent has the Debugger domain enabled on
// one of its sessions.
func (st *agentState) setDebugger(session string, on bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.debugger == nil {
		st.debugger = map[string]bool{}
	}
	if on {
		st.debugger[session] = true
	} else {
		delete(st.debugger, session)
	}
}

// detachDebugger forgets session's debugger and reports whether it was on.
func (st *agentState) detachDebugger(session string) bool {
	if session == "" {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	on := st.debugger[session]
	delete(st.debugger, session)
	return on
}

// debuggerGone starts the input quiet window when an agent that had the
// debugger on goes away: a script it kept paused runs on now, with no
// debugger left for agentDebugging to see.
func (g *Guard) debuggerGone(st *agentState) {
	if st == nil || g.ctl == nil {
		return
	}
	st.mu.Lock()
	on := len(st.debugger) > 0
	st.mu.Unlock()
	if on {
		g.ctl.input.Begin(st.userScope(), time.Now())()
	}
}

// agentDebugging returns why a grant on a page of user owner must wait
// while one of that user's agents has the JavaScript debugger enabled, or
// "". Another user's debugger cannot reach the page (users never share a
// renderer); on a page of no user (known false) every agent's counts.
func (g *Guard) agentDebugging(owner string, known bool) string {
	g.agents.mu.Lock()
	defer g.agents.mu.Unlock()
	for a, st := range g.agents.m {
		if known && st.user != nil && st.user.Key != owner {
			continue
		}
		st.mu.Lock()
		var sessions []string
		for s := range st.debugger {
			sessions = append(sessions, s)
		}
		st.mu.Unlock()
		for _, s := range sessions {
			if a.Owns(s) { // a detached session's debugger went with it
				return "an agent has the JavaScript debugger enabled (Debugger.enable): its breakpoints can run code in any script, the controls' too"
			}
		}
	}
	return ""
}

// scrubGuardScript answers Debugger.getScriptSource with an error when the
// script is one of the guard's own (script ids are small integers an agent
// can guess; the guard's scripts run in worlds agents must not study).
func scrubGuardScript(result, errRaw []byte) ([]byte, []byte) {
	if len(errRaw) > 0 {
		return result, errRaw
	}
	var r struct {
		Source string `json:"scriptSource"`
	}
	if jsonv2.Unmarshal(result, &r) != nil {
		return result, errRaw
	}
	for _, s := range []string{js.Controls, js.ControlsUpdate, js.Read} { // js.ReadyState is too common a line
		if strings.Contains(r.Source, strings.TrimSpace(s)) {
			return nil, cdpmsg.AppendErrorObject(nil, cdpmsg.CodeServerError, cdpmsg.Refusal("Debugger.getScriptSource", "the script is one of cdpguard's own, run in its hidden isolated worlds"))
		}
	}
	return result, errRaw
}
