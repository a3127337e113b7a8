package firewall

// ControlsRule is what the human controls (internal/controls) do with an
// agent command, the controls column of the table: the controls decide
// whether a click on their "Allow" button can be a human's, so they must
// see every agent action that could stand in for one or reach their world
// (docs/decisions/2026-12-01-controls.md, 2026-12-01-controls-red-team.md).
type ControlsRule int

const (
	// CtlNone: the controls do not look at the command.
	CtlNone ControlsRule = iota
	// CtlInput counts as the agent's input until its reply and for the
	// quiet window after it, against its own user's buttons: CDP input is
	// trusted by the page, and an emulated layout change moves a button
	// under a pointer aimed elsewhere.
	CtlInput
	// CtlWindow counts like input against every user's buttons: the
	// command opens, closes, raises or moves a window, which can cover or
	// reveal any button on the screen.
	CtlWindow
	// CtlDebuggerOn records the session's debugger: no grant on the
	// user's pages while it is on (a breakpoint can run code in any world).
	CtlDebuggerOn
	// CtlDebuggerOff forgets the session's debugger and counts as input:
	// a click handler it kept paused runs on now.
	CtlDebuggerOff
	// CtlDetach counts as input when the detached session had the debugger
	// on (it resumes what it kept paused, like CtlDebuggerOff).
	CtlDetach
	// CtlScriptSource answers a reply carrying one of the guard's own
	// scripts with a refusal (script ids are small integers an agent can
	// guess). It applies with the controls off too: the reader's script is
	// the guard's as well.
	CtlScriptSource
	// CtlCondition refuses, with the controls on, a breakpoint that carries
	// a condition: it runs in the paused script's world, which may be the
	// controls' own.
	CtlCondition
	// CtlScriptEdit refuses, with the controls on, live-editing a script.
	CtlScriptEdit
)

// Refuses reports whether a row of this kind may refuse a command (the
// others only watch it).
func (r ControlsRule) Refuses() bool { return r == CtlCondition || r == CtlScriptEdit }

// Reasons of the controls rows.
const (
	whyMoves     = "it opens, closes, raises or moves a window or the page's layout: no grant until the quiet window after it ends"
	whyDebugger  = "no grant on the user's pages while its debugger is on, nor in the quiet window after it goes"
	whyCondition = "with the controls on, breakpoint conditions are refused: a condition runs in the paused script's world, which may be the controls' own"
)
