package cdpguard

import "github.com/cdpguard/cdpguard/internal/worlds"

// newWorlds wires the guard's isolated worlds (internal/worlds) to the
// session look-up and the controls' taint of commands naming a context.
func (g *Guard) newWorlds() *worlds.Worlds {
	return worlds.New(worlds.Deps{Sessions: g.targets, Note: g.noteNamed, Pass: g.passNamed, Pages: g.pages})
}
