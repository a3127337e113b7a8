package firewall

// EventRule is what the guard does with a browser event on its way to an
// agent's session, a row of the agent event table: internal/isolation
// keeps the target events to the user's own targets and the connection's
// own sessions, and internal/worlds keeps the execution-context and script
// events from telling of the guard's hidden worlds. They decide by the
// row, not by the event's name. Events not in the table pass unchanged.
// (Which component observes which event on the guard's own sessions is
// the other event table, cdpguard/events.go.)
type EventRule int

const (
	// EvPass: the event reaches the agent unchanged (the zero value).
	EvPass EventRule = iota
	// EvTargetInfo: shown only for the user's web-content targets (and the
	// browser's own target); the guard's own attachment does not show.
	EvTargetInfo
	// EvTargetGone: shown only for the user's web-content targets.
	EvTargetGone
	// EvTargetAttached: shown only for the user's web-content targets; an
	// auto-attach to any other target is undone.
	EvTargetAttached
	// EvSessionDetached: shown only for the connection's own sessions, whose
	// attachment ends.
	EvSessionDetached
	// EvSessionMessage: shown only for the connection's own sessions.
	EvSessionMessage
	// EvContextCreated: held back when the context is a guard world's.
	EvContextCreated
	// EvContextDestroyed: held back when the context's creation was.
	EvContextDestroyed
	// EvContextsCleared: the session's held-back contexts are forgotten.
	EvContextsCleared
	// EvScriptParsed: held back when the script runs in a guard world.
	EvScriptParsed
)

// agentEvents is the agent event table.
var agentEvents = map[string]EventRule{
	"Target.targetCreated":              EvTargetInfo,
	"Target.targetInfoChanged":          EvTargetInfo,
	"Target.targetDestroyed":            EvTargetGone,
	"Target.targetCrashed":              EvTargetGone,
	"Target.attachedToTarget":           EvTargetAttached,
	"Target.detachedFromTarget":         EvSessionDetached,
	"Target.receivedMessageFromTarget":  EvSessionMessage,
	"Runtime.executionContextCreated":   EvContextCreated,
	"Runtime.executionContextDestroyed": EvContextDestroyed,
	"Runtime.executionContextsCleared":  EvContextsCleared,
	"Debugger.scriptParsed":             EvScriptParsed,
	"Debugger.scriptFailedToParse":      EvScriptParsed,
}

// AgentEvent returns the row of a browser event on its way to an agent's
// session; EvPass for events not in the table. It does not allocate.
func AgentEvent(method string) EventRule { return agentEvents[method] }
