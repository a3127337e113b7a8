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
	case "Debugger.setBreakpoint", "Debugger.setBreakpointByUrl", "Debugger.setBreakpointOnFunctionCall", "Debugger.setScriptSource":
		return g.debuggerCodeCommand(cmd)
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
		if strings.HasPrefix(s, reservedPrefix) || g.worlds.IsName(s) || (g.ctl != nil && s == g.ctl.binding) {
			return refusal(cmd.Method, k+" "+truncateReason(s)+": names starting with "+reservedPrefix+" belong to cdpguard's own isolated worlds and bindings")
		}
	}
	return relay.Verdict{}
}

// debuggerCodeCommand refuses, while the controls are on, the Debugger
// commands that run or install an agent's code in whatever world a script
// belongs to: a breakpoint condition is evaluated in the paused frame, and
// Debugger.setScriptSource rewrites a live script. Script ids are small
// integers (Debugger.getScriptSource with guessed ids reads the controls'
// script), and a condition in the controls' code could call the binding
// with a forged report of a human's click (e2e TestRedTeamControls,
// debugger-condition: it granted a host with no human at all).
func (g *Guard) debuggerCodeCommand(cmd relay.Command) relay.Verdict {
	if g.ctl == nil {
		return relay.Verdict{}
	}
	why := "with cdpguard's controls on, live-editing scripts is refused: it could rewrite the controls' own code"
	if cmd.Method != "Debugger.setScriptSource" {
		var p struct {
			Condition string `json:"condition"`
		}
		if err := unmarshalParams(cmd.Params, &p); err != nil {
			return refusal(cmd.Method, "unreadable params: "+err.Error())
		}
		if p.Condition == "" {
			return relay.Verdict{}
		}
		why = "with cdpguard's controls on, breakpoint conditions are refused: a condition runs in the paused script's world, which may be the controls' own"
	}
	return refusal(cmd.Method, why)
}
