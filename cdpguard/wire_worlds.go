package cdpguard

import (
	"context"

	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/worlds"
)

// newWorlds wires the guard's isolated worlds (internal/worlds) to the
// session look-up and the controls' taint of commands naming a context.
func (g *Guard) newWorlds() *worlds.Worlds {
	return worlds.New(worlds.Deps{Sessions: g.targets, Note: g.noteNamed, Pass: g.passNamed, Pages: g.pages})
}

// worldCommand refuses an agent command that reaches one of the guard's
// isolated worlds by context id (internal/worlds); by name it is the
// firewall's RefuseReserved rows.
func (g *Guard) worldCommand(ctx context.Context, a *relay.Agent, cmd relay.Command) relay.Verdict {
	return g.worlds.Command(ctx, a, cmd)
}
