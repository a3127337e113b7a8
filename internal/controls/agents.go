package controls

import (
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/quiet"
	"github.com/cdpguard/cdpguard/js"
)

// Agent is one agent connection as the controls see it.
type Agent interface {
	// Owns reports whether sessionID is one of the agent's live sessions
	// (a detached session's debugger went with it).
	Owns(sessionID string) bool
	// TargetOf returns the target of one of the agent's sessions.
	TargetOf(sessionID string) (target string, ok bool)
}

// Command is an agent command as the controls see it, once the guard's
// other rules let it through to the browser.
type Command struct {
	Agent   Agent
	User    string // the agent's user key ("" is the shared fallback user)
	Session string // the session it was sent on
	Params  []byte
}

// ReplyHook sees a command's reply (a relay.Verdict's OnReply).
type ReplyHook = func(result, errRaw []byte) ([]byte, []byte)

// AgentCommand follows an agent command the grants depend on, as the
// firewall table's controls column says (kind): input and window moves
// until their reply and for the quiet window after it (internal/quiet),
// the debugger's sessions (a breakpoint's condition runs in the frame it
// pauses, so an agent with the debugger on can run code in the controls
// world), and it scrubs the guard's own scripts from
// Debugger.getScriptSource replies, with the controls off too. It returns
// the hook to run on the command's reply, or nil. Call it only for a
// command about to reach the browser.
func (c *Controls) AgentCommand(cmd Command, kind firewall.ControlsRule) ReplyHook {
	if kind == firewall.CtlScriptSource {
		return scrubGuardScript
	}
	if c == nil {
		return nil
	}
	now := time.Now()
	switch kind {
	case firewall.CtlDebuggerOn:
		c.dbg.set(c.sessionPage(cmd.Agent, cmd.Session), cmd.Agent, cmd.User, cmd.Session, true)
	case firewall.CtlDebuggerOff:
		c.dbg.set(c.sessionPage(cmd.Agent, cmd.Session), cmd.Agent, cmd.User, cmd.Session, false)
		// A handler the agent kept paused runs on now: as right after
		// input (e2e TestTimed/RedTeamControls/debugger-pause).
		c.input.Begin(quiet.User(cmd.User), now)()
	case firewall.CtlDetach:
		// Detaching a session with the debugger on resumes what it kept
		// paused, like Debugger.disable: the quiet window starts at the
		// reply (e2e TestTimed/RedTeamControls/debugger-pause ended by disable).
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if len(cmd.Params) > 0 && jsonv2.Unmarshal(cmd.Params, &p) != nil {
			return nil
		}
		if c.dbg.detach(c.sessionPage(cmd.Agent, p.SessionID), cmd.Agent, p.SessionID) {
			return endOnReply(c.input.Begin(quiet.User(cmd.User), now))
		}
	case firewall.CtlInput:
		return endOnReply(c.input.Begin(quiet.User(cmd.User), now))
	case firewall.CtlWindow:
		// A window opened, closed, raised or moved can cover or reveal any
		// user's button (e2e TestTimed/RedTeamControls/other-window: an agent
		// raised a window it had kept behind another until the button was
		// armed; the page saw neither a focus nor a visibility change).
		return endOnReply(c.input.Begin(quiet.Everywhere, now))
	}
	return nil
}

func endOnReply(done func()) ReplyHook {
	return func(result, errRaw []byte) ([]byte, []byte) {
		done()
		return result, errRaw
	}
}

// Refusal returns why, with the controls on, an agent command of kind is
// refused, or "": the Debugger commands that run or install an agent's
// code in whatever world a script belongs to. A breakpoint condition is
// evaluated in the paused frame, and Debugger.setScriptSource rewrites a
// live script; script ids are small integers (Debugger.getScriptSource
// with guessed ids reads the controls' script), and a condition in the
// controls' code could call the binding with a forged report of a human's
// click (e2e TestTimed/RedTeamControls, debugger-condition: it granted a host
// with no human at all).
func (c *Controls) Refusal(kind firewall.ControlsRule, params []byte) string {
	if c == nil {
		return ""
	}
	switch kind {
	case firewall.CtlScriptEdit:
		return "with cdpguard's controls on, live-editing scripts is refused: it could rewrite the controls' own code"
	case firewall.CtlCondition:
		var p struct {
			Condition string `json:"condition"`
		}
		if len(params) > 0 {
			if err := jsonv2.Unmarshal(params, &p); err != nil {
				return "unreadable params: " + err.Error()
			}
		}
		if p.Condition != "" {
			return "with cdpguard's controls on, breakpoint conditions are refused: a condition runs in the paused script's world, which may be the controls' own"
		}
	}
	return ""
}

// WindowOpened starts the quiet window everywhere when any page target
// appears: a new tab or popup can cover or reveal any user's button, and a
// page's own window.open (after its agent's input, which counts only
// against its own user) is seen by no agent command.
func (c *Controls) WindowOpened() {
	if c == nil {
		return
	}
	c.input.Begin(quiet.Everywhere, time.Now())()
}

// AgentGone forgets an agent that disconnected. One that had the debugger
// on starts the quiet window: a script it kept paused runs on now, with no
// debugger left to see.
func (c *Controls) AgentGone(a Agent) {
	if c == nil {
		return
	}
	if user, on := c.dbg.gone(a); on {
		c.input.Begin(quiet.User(user), time.Now())()
	}
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
	if cdpmsg.UnmarshalBrowser(result, &r) != nil {
		return result, errRaw
	}
	for _, s := range []string{js.Controls, js.ControlsUpdate, js.Read} { // js.ReadyState is too common a line
		if strings.Contains(r.Source, strings.TrimSpace(s)) {
			return nil, cdpmsg.AppendErrorObject(nil, cdpmsg.CodeServerError, cdpmsg.Refusal("Debugger.getScriptSource", "the script is one of cdpguard's own, run in its hidden isolated worlds"))
		}
	}
	return result, errRaw
}
