package dialogs

import (
	"context"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// GraceOf turns the configured grace (Config.DialogGrace) into the
// handler's: zero is DefaultGrace, negative answers at once.
func GraceOf(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultGrace
	case d < 0:
		return 0
	}
	return d
}

// Command applies the firewall table's dialog rows to an agent command,
// the commands the handler depends on: Page.enable and Page.disable say
// whether the agent listens for dialogs on a page, and
// Page.handleJavaScriptDialog is the agent's answer, which must not race
// the guard's own (exactly one answer per dialog). owner is the agent and
// name its name for logs; target returns the target of the command's
// session, asked only as the agent starts listening. Before an agent stops
// listening on a page (Page.disable, detach) the page's open dialog is
// settled first (settle), bounded, on the agent's read goroutine (ctx is
// the command's).
func (h *Handler) Command(ctx context.Context, owner any, name string, cmd relay.Command, action firewall.Action, target func() string) relay.Verdict {
	switch action {
	case firewall.DialogsListen:
		// Registered before Chrome enables the domain, so that a dialog
		// opening in between already waits for this agent.
		if id := target(); id != "" {
			h.Listen(owner, cmd.SessionID, id, true)
		}
	case firewall.DialogsUnlisten:
		h.settleSession(ctx, owner, cmd.SessionID)
		h.Listen(owner, cmd.SessionID, "", false)
	case firewall.DialogsAnswer:
		answered, late := h.Claim(owner, cmd.SessionID)
		if answered == nil && late == "" {
			return relay.Verdict{}
		}
		return relay.Verdict{OnReply: func(result, errRaw []byte) ([]byte, []byte) {
			if answered != nil {
				answered(len(errRaw) == 0)
			}
			if late != "" && len(errRaw) > 0 {
				h.log.Info("late dialog answer", "agent", name, "why", late)
				errRaw = cdpmsg.AppendErrorObject(nil, cdpmsg.CodeServerError, late)
			}
			return result, errRaw
		}}
	case firewall.Detach:
		var p struct {
			SessionID string `json:"sessionId"`
			TargetID  string `json:"targetId"`
		}
		if len(cmd.Params) > 0 && jsonv2.Unmarshal(cmd.Params, &p) == nil {
			for _, s := range leaving(owner, cmd.SessionID, p.SessionID, p.TargetID) {
				h.settleSession(ctx, owner, s)
				h.Listen(owner, s, "", false)
			}
		}
	case firewall.AutoAttach:
		var p struct {
			AutoAttach bool         `json:"autoAttach"`
			Filter     jsonv2.Value `json:"filter"`
		}
		if jsonv2.Unmarshal(cmd.Params, &p) != nil || !p.AutoAttach || len(p.Filter) > 0 {
			// Chrome may end any session auto-attached below this one
			// (which of them it auto-attached is not known here).
			for _, s := range leaving(owner, cmd.SessionID, cmd.SessionID, "") {
				if s != cmd.SessionID {
					h.settleSession(ctx, owner, s)
				}
			}
		}
	}
	return relay.Verdict{}
}

// attachTree is an owner that knows which of its sessions a detach ends
// (*relay.Agent).
type attachTree interface {
	Leaving(on, sessionID, targetID string) []string
}

// leaving is the owner's sessions a Target.detachFromTarget sent on session
// on ends: the one it names, the ones on attached to the target it names,
// and their children, which Chrome detaches with them (a browser-level
// session's pages). Each page one listens on is settled: Chrome detaches
// them all with Page events enabled.
func leaving(owner any, on, sessionID, targetID string) []string {
	if t, ok := owner.(attachTree); ok {
		return t.Leaving(on, sessionID, targetID)
	}
	if sessionID != "" {
		return []string{sessionID}
	}
	return nil
}
