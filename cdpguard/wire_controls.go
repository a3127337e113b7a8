package cdpguard

import (
	"slices"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"

	"github.com/cdpguard/cdpguard/internal/controls"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/worlds"
)

// newControls builds the human controls (internal/controls) when
// Config.Controls is on; nil, the controls off, otherwise. start runs
// their push loop, which ends with the guard.
func (g *Guard) newControls() *controls.Controls {
	if !g.cfg.Controls {
		return nil
	}
	ctl := controls.New(g.ctx, controls.Deps{
		Browser:        muxCaller{g},
		Worlds:         ctlWorlds{g.worlds},
		Grants:         ctlGrants{g},
		World:          g.worlds.NewName("controls"),
		Pages:          g.pages,
		Owners:         g.users,
		ExplainBlocked: g.cfg.BlockedNavigation != "error",
		Go:             g.goWaited,
		Log:            g.log,
	})
	g.dialogs.SetHuman(true, ctl.DialogAnswered)
	return ctl
}

// ctlWorlds records the controls' contexts among the guard's worlds.
type ctlWorlds struct{ w *worlds.Worlds }

func (w ctlWorlds) MadeIn(target target.ID, frameID cdp.FrameID, id runtime.ExecutionContextID) {
	w.w.MadeIn(target, frameID, id)
}

// ctlGrants is the guard's session grants as the controls use them.
type ctlGrants struct{ g *Guard }

func (c ctlGrants) GrantHost(target, host, via string) (string, error) {
	return c.g.scopes.Grant(target, host, via)
}

func (c ctlGrants) Grantable(target, host string) error {
	_, err := c.g.scopes.Grantable(target, host)
	return err
}

func (c ctlGrants) Reachable(target string) []string {
	return slices.Concat(c.g.policyOfTarget(target).Origins(), c.g.scopes.Hosts(target))
}

// noteNamed records the execution context ids an agent's command names,
// before the worlds stage checks them (worlds.Worlds.Command) (internal/controls, taint.go). It
// returns what ends the note; nil without controls.
func (g *Guard) noteNamed(a *relay.Agent, session string, ids []int64) (done func()) {
	return g.ctl.Note(a, session, ids)
}

// passNamed is called as the worlds stage lets a command naming ids
// through (target: the session's target when it looked it up, "" when
// not). It returns the worlds stage's verdict for the command.
func (g *Guard) passNamed(a *relay.Agent, session, target string, ids []int64, done func()) relay.Verdict {
	g.ctl.Named(a, session, target, ids)
	return worlds.NamedVerdict(done)
}
