package firewall

// Scope is the isolation rule of a method: which ids in it are checked
// against the agent's user before it reaches Chrome.
type Scope int

const (
	// NoIDs marks methods that name no target, context or window and whose
	// answer says nothing about other users (events they start are filtered).
	NoIDs Scope = iota
	// Targets: the targetId and sessionId params must be the user's, and
	// the target web content.
	Targets
	// AttachTargets is Targets for Target.attachToTarget: a passed attach
	// is recorded as the connection's own, so that the guard's own
	// attachment to every target does not show through as "attached".
	AttachTargets
	// WindowOfTarget is Targets for Browser.getWindowForTarget: the reply's
	// windowId is learned as a window of the user's.
	WindowOfTarget
	// LeaveTarget is Targets for Target.detachFromTarget: the target need
	// not be web content (leaving is always allowed).
	LeaveTarget
	// Contexts: a browserContextId param must be the user's; without one
	// the command gets the user's own context (on every session: Chrome
	// gives page sessions the browser's Target and Browser domains).
	Contexts
	// BrowserContexts is Contexts on browser-level sessions only (Chrome
	// refuses browserContextId on page sessions there).
	BrowserContexts
	// Windows: the windowId param must be the window of one of the user's
	// targets.
	Windows
	// ListTargets: the reply is filtered down to the user's own targets.
	ListTargets
	// ListContexts: the reply is filtered down to the user's own contexts.
	ListContexts
	// CreateContexts: the user creates a context of its own, with the
	// guard's proxy settings; the guard records it.
	CreateContexts
	// DisposeContexts: the user disposes only a context it created, never
	// its default one.
	DisposeContexts
)

// String names the scope, for the README table and test output.
func (s Scope) String() string {
	switch s {
	case NoIDs:
		return "no ids"
	case Targets:
		return "targetId/sessionId must be the user's"
	case AttachTargets:
		return "targetId/sessionId must be the user's, attachment recorded"
	case WindowOfTarget:
		return "targetId/sessionId must be the user's, window learned"
	case LeaveTarget:
		return "targetId/sessionId must be the user's, any target type"
	case Contexts:
		return "browserContextId must be the user's (default: the user's)"
	case BrowserContexts:
		return "browserContextId must be the user's (default: the user's), browser sessions"
	case Windows:
		return "windowId must be a window of the user's targets"
	case ListTargets:
		return "reply filtered to the user's targets"
	case ListContexts:
		return "reply filtered to the user's contexts"
	case CreateContexts:
		return "the user's own new context"
	case DisposeContexts:
		return "the user's own contexts only"
	}
	return "Scope(?)"
}

// UserCap is the per-user cap a command counts against, a column of the
// firewall table: internal/isolation refuses the command when its user is
// at the cap (caps.go there), naming the cap and its flag.
type UserCap int

const (
	// NoCap: the command counts against no per-user cap.
	NoCap UserCap = iota
	// CapTabs: the command opens a tab (--max-tabs-per-user).
	CapTabs
	// CapContexts: the command creates a browser context
	// (--max-contexts-per-user, and --max-contexts over all users).
	CapContexts
)

// isolation is the isolation table. On browser-level sessions (no sessionId,
// or a browser session an agent's auto-attach got) it is also the
// allowlist: a method not listed here (and not a Guard method) is refused,
// because Chrome runs browser-level methods for the whole browser, across
// every user's contexts (window bounds, memory pressure, process lists,
// histograms). The Browser and SystemInfo domains get the same list on
// every session, because Chrome gives page sessions the browser's Browser
// domain. Page, frame and worker sessions otherwise pass unknown methods:
// Chrome scopes them to their target.
//
// The list is what Playwright, Puppeteer, chromedp, @playwright/mcp and
// chrome-devtools-mcp send on the browser session (e2e
// TestBrowserSessionMethods records it), plus the ids rules for what they
// name.
var isolation = map[string]Scope{
	"Browser.getVersion":          NoIDs,
	"Browser.close":               NoIDs, // rewritten: closes the user's targets
	"Browser.getWindowForTarget":  WindowOfTarget,
	"Browser.getWindowBounds":     Windows,
	"Browser.setWindowBounds":     Windows,
	"Browser.setContentsSize":     Windows,
	"Browser.setDownloadBehavior": Contexts,
	"Browser.cancelDownload":      Contexts,
	"Browser.grantPermissions":    Contexts,
	"Browser.resetPermissions":    Contexts,
	"Browser.setPermission":       Contexts,

	"Storage.getCookies":   BrowserContexts,
	"Storage.setCookies":   BrowserContexts,
	"Storage.clearCookies": BrowserContexts,

	"Target.setDiscoverTargets":       NoIDs, // events are filtered
	"Target.setAutoAttach":            NoIDs, // attachments are filtered
	"Target.attachToBrowserTarget":    NoIDs, // the new session gets these rules too
	"Target.getTargets":               ListTargets,
	"Target.getBrowserContexts":       ListContexts,
	"Target.createTarget":             Contexts,
	"Target.createBrowserContext":     CreateContexts,
	"Target.disposeBrowserContext":    DisposeContexts,
	"Target.attachToTarget":           AttachTargets,
	"Target.closeTarget":              Targets,
	"Target.activateTarget":           Targets,
	"Target.getTargetInfo":            Targets,
	"Target.detachFromTarget":         LeaveTarget,
	"Target.autoAttachRelated":        Targets,
	"Target.sendMessageToTarget":      Targets,
	"Target.getDevToolsTarget":        Targets, // chrome-devtools-mcp asks it of every page
	"Runtime.runIfWaitingForDebugger": NoIDs,   // a no-op on the browser target; some clients send it everywhere
}

// whyNotListed is the refusal reason of browser-level methods not on the
// allowlist.
const whyNotListed = "it is not on cdpguard's browser-level allowlist (browser-level methods act on every user's tabs and windows)"

// browserWideDomains are the domains whose methods are browser-wide on
// every session, so that the allowlist applies on page sessions too.
var browserWideDomains = []string{"Browser", "SystemInfo"}

// guardDomain is the guard's own domain: every Guard method may be sent on
// a browser-level session, and names no ids.
const guardDomain = "Guard"

// AllowlistRows returns the isolation table's keys, for tests and docs.
func AllowlistRows() []string {
	out := make([]string, 0, len(isolation))
	for k := range isolation {
		out = append(out, k)
	}
	return out
}
