package cdpguard

import (
	"strings"

	"github.com/cdpguard/cdpguard/internal/relay"
)

// reservedPrefix starts every name the guard gives its isolated worlds and
// bindings; agents may not use such names.
const reservedPrefix = "cdpguard_"

// worldNameCommand refuses an agent command that would reach one of the
// guard's isolated worlds by name: Page.createIsolatedWorld with a guard
// world's name returns that world's context (Chrome reuses a world by
// name), Page.addScriptToEvaluateOnNewDocument with it would run the
// agent's code there, and Runtime.addBinding/removeBinding with the
// guard's binding name or world would replace or drop the binding the
// controls report a human's click through.
func (g *Guard) worldNameCommand(cmd relay.Command) relay.Verdict {
	var keys []string
	switch cmd.Method {
	case "Page.createIsolatedWorld", "Page.addScriptToEvaluateOnNewDocument":
		keys = []string{"worldName"}
	case "Runtime.addBinding", "Runtime.removeBinding":
		keys = []string{"name", "executionContextName"}
	default:
		return relay.Verdict{}
	}
	var p map[string]any
	if err := unmarshalParams(cmd.Params, &p); err != nil {
		return refusal(cmd.Method, "unreadable params: "+err.Error())
	}
	for _, k := range keys {
		s, _ := p[k].(string)
		if s == "" {
			continue
		}
		if strings.HasPrefix(s, reservedPrefix) || g.worlds.isName(s) || (g.ctl != nil && s == g.ctl.binding) {
			return refusal(cmd.Method, k+" "+truncateReason(s)+": names starting with "+reservedPrefix+" belong to cdpguard's own isolated worlds and bindings")
		}
	}
	return relay.Verdict{}
}
