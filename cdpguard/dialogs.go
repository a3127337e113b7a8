package cdpguard

import (
	"context"
	"time"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/dialogs"
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// dialogGrace turns Config.DialogGrace into the handler's grace: zero is
// the default (dialogs.DefaultGrace), negative answers at once.
func dialogGrace(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return dialogs.DefaultGrace
	case d < 0:
		return 0
	}
	return d
}

// dialogCommand lets the dialog handler see the agent commands it depends
// on: Page.enable and Page.disable say whether the agent listens for
// dialogs on a page, and Page.handleJavaScriptDialog is the agent's answer,
// which must not race the guard's own (exactly one answer per dialog).
// It applies the firewall table's dialog rows (intercept.go).
func (g *Guard) dialogCommand(ctx context.Context, a *relay.Agent, cmd relay.Command, action firewall.Action) relay.Verdict {
	switch action {
	case firewall.DialogsListen:
		// Registered before Chrome enables the domain, so that a dialog
		// opening in between already waits for this agent. The target is
		// the agent's own record of the session (no browser round trip).
		if id := g.targets.SessionTarget(ctx, a, cmd.SessionID); id != "" {
			g.dialogs.Listen(a, cmd.SessionID, id, true)
		}
	case firewall.DialogsUnlisten:
		g.dialogs.Listen(a, cmd.SessionID, "", false)
	case firewall.DialogsAnswer:
		answered, late := g.dialogs.Claim(a, cmd.SessionID)
		if answered == nil && late == "" {
			return relay.Verdict{}
		}
		return relay.Verdict{OnReply: func(result, errRaw []byte) ([]byte, []byte) {
			if answered != nil {
				answered(len(errRaw) == 0)
			}
			if late != "" && len(errRaw) > 0 {
				g.log.Info("late dialog answer", "agent", a.Name(), "why", late)
				errRaw = cdpmsg.AppendErrorObject(nil, cdpmsg.CodeServerError, late)
			}
			return result, errRaw
		}}
	case firewall.Detach:
		var p struct {
			SessionID string `json:"sessionId"`
		}
		if unmarshalParams(cmd.Params, &p) == nil && p.SessionID != "" {
			g.dialogs.Listen(a, p.SessionID, "", false)
		}
	}
	return relay.Verdict{}
}
