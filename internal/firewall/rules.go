// Package firewall holds the method firewall: what cdpguard does with each
// CDP method an agent sends, and with each browser event on its way to an
// agent. The tables are data (the firewall table in this file, the
// isolation table in isolation.go, the agent event table in events.go), so
// that a reviewer can read the whole policy at once, and the packages that
// apply a rule read its row instead of comparing method names
// (internal/repocheck counts the comparisons left elsewhere); methods not
// in the tables pass (Chrome adds domains often, and refusing the unknown
// would break clients).
package firewall

import "strings"

// Action is what happens to a command.
type Action int

const (
	// Pass forwards the command unchanged (the zero value: unknown methods pass).
	Pass Action = iota
	// Refuse answers with a CDP error naming the rule; nothing is forwarded.
	Refuse
	// RefuseParams refuses the command when it carries any of Rule.Params.
	RefuseParams
	// CheckURL refuses the command if its url param has a scheme an agent
	// may not open (see RefusedScheme). Hosts are left to the Fetch judge,
	// whose explanation page tells the agent what it can reach.
	CheckURL
	// CheckPolicy refuses the command if its url param is set and the
	// allowlist does not allow it: for requests the Fetch judge never sees
	// (an agent's own interception redirecting a request has CheckRedirect).
	CheckPolicy
	// CheckRedirect is CheckPolicy for an agent's own request interception
	// (Fetch.continueRequest with a url): a redirect outside the allowlist
	// is refused and the paused request is failed (BlockedByClient) on the
	// agent's behalf, so that it never hangs.
	CheckRedirect
	// CheckPermissions refuses grants of local-network permissions, which
	// would let pages reach loopback and private addresses.
	CheckPermissions
	// RewriteDownloads points downloads at the user's own directory, or
	// denies them when the guard has no download directory.
	RewriteDownloads
	// CheckFiles refuses the command unless every file path in it resolves
	// inside the guard's upload directory.
	CheckFiles
	// Guard marks the guard's own domain: a Guard method the guard does not
	// have is refused, naming the ones it has.
	Guard
	// GuardRead, GuardPolicy, GuardEnable and GuardDisable are the guard's
	// own methods (Guard.read, Guard.getPolicy, Guard.enable,
	// Guard.disable), answered by cdpguard without the browser.
	GuardRead
	GuardPolicy
	GuardEnable
	GuardDisable
	// CloseOwnTargets answers Browser.close by closing only the user's own
	// targets: one agent must not take the browser down for other users.
	CloseOwnTargets
	// DialogsListen, DialogsUnlisten and DialogsAnswer are the commands the
	// dialog handler must see: Page.enable and Page.disable say whether the
	// agent listens for dialogs on a page (and so gets the grace to answer
	// them), and Page.handleJavaScriptDialog is the agent's answer, which
	// must not race the guard's own (exactly one answer per dialog; an
	// answer after the guard's gets a CDP error naming cdpguard).
	DialogsListen
	DialogsUnlisten
	DialogsAnswer
	// Detach is Target.detachFromTarget: the agent no longer answers the
	// dialogs of the session it leaves.
	Detach
	// AutoAttach is Target.setAutoAttach: switched off, or given a
	// filter, Chrome ends sessions it auto-attached below the sending one,
	// so the dialog handler settles their pages first.
	AutoAttach
	// CheckNavigation is CheckURL for Page.navigate: a refused navigation
	// on a page session is answered as Chrome answers a blocked one.
	CheckNavigation
	// AttachTarget is Target.attachToTarget: aimed at the browser's own
	// target it becomes an attach to a browser session of the agent's own.
	AttachTarget
	// CheckSizes refuses the command when a number in its params is over
	// one of Rule.Sizes (SizeRefusal in sizes.go): surfaces so big that
	// rendering them stalls the browser for every user.
	CheckSizes
	// Controls marks a command the human controls (internal/controls) must
	// see; Rule.Controls says what they do with it. Rows of other actions
	// may carry a Rule.Controls too.
	Controls
	// RefuseReserved refuses the command when one of Rule.Params is a name
	// the guard keeps for its own isolated worlds and binding
	// (ReservedPrefix): Chrome reuses a world by name, so a guessed name
	// would reach the world itself (ReservedRefusal in reserved.go).
	RefuseReserved
	// CheckDropFiles is CheckFiles for the files a drag event drops (in
	// its data param).
	CheckDropFiles
)

// String names the action, for test and log output.
func (a Action) String() string {
	switch a {
	case Pass:
		return "Pass"
	case Refuse:
		return "Refuse"
	case RefuseParams:
		return "RefuseParams"
	case CheckURL:
		return "CheckURL"
	case CheckPolicy:
		return "CheckPolicy"
	case CheckRedirect:
		return "CheckRedirect"
	case CheckPermissions:
		return "CheckPermissions"
	case RewriteDownloads:
		return "RewriteDownloads"
	case CheckFiles:
		return "CheckFiles"
	case Guard:
		return "Guard"
	case GuardRead:
		return "GuardRead"
	case GuardPolicy:
		return "GuardPolicy"
	case GuardEnable:
		return "GuardEnable"
	case GuardDisable:
		return "GuardDisable"
	case CloseOwnTargets:
		return "CloseOwnTargets"
	case DialogsListen:
		return "DialogsListen"
	case DialogsUnlisten:
		return "DialogsUnlisten"
	case DialogsAnswer:
		return "DialogsAnswer"
	case Detach:
		return "Detach"
	case AutoAttach:
		return "AutoAttach"
	case CheckNavigation:
		return "CheckNavigation"
	case AttachTarget:
		return "AttachTarget"
	case CheckSizes:
		return "CheckSizes"
	case Controls:
		return "Controls"
	case RefuseReserved:
		return "RefuseReserved"
	case CheckDropFiles:
		return "CheckDropFiles"
	}
	return "Action(?)"
}

// Rule is one row of the table.
type Rule struct {
	Action Action
	// BrowserOnly applies the rule only on browser-level sessions.
	BrowserOnly bool
	// Params are the params RefuseParams refuses.
	Params []string
	// Sizes are the bounds CheckSizes applies.
	Sizes []Size
	// Why is the reason given to the agent.
	Why string
	// Scope is the method's isolation rule (isolation.go); Lookup fills it.
	Scope Scope
	// Controls is what the human controls do with the command (controls.go);
	// CtlNone on most rows.
	Controls ControlsRule
	// Cap is the per-user cap the command counts against (isolation.go);
	// NoCap on most rows.
	Cap UserCap
}

// Isolated reports whether the row has an isolation column: ids the
// user's own (Scope) or a per-user cap (Cap). A row with neither gives
// internal/isolation nothing to check.
func (r Rule) Isolated() bool { return r.Scope != NoIDs || r.Cap != NoCap }

// whyURL is the reason of the URL rows.
const whyURL = "only http(s), about:, data: and blob: URLs may be opened"

// rules is the firewall table. Keys are exact methods, or "Domain.*" for a
// whole domain.
var rules = map[string]Rule{
	// Refused outright: each would escape the guard or hurt other users.
	"Target.exposeDevToolsProtocol": {Action: Refuse, Why: "it would give page scripts a browser-level channel"},
	"Target.setRemoteLocations":     {Action: Refuse, Why: "it would make the browser connect to debugging endpoints outside the egress proxy"},
	"Target.openDevTools":           {Action: Refuse, Why: "a DevTools window is a privileged page outside the guard"},
	// A non-flat session carries whole commands inside this one, past
	// every other row of this table (an e2e test uploaded /etc/passwd with
	// an inner DOM.setFileInputFiles). Clients attach with flatten: true.
	"Target.sendMessageToTarget":    {Action: Refuse, Why: "commands inside it would bypass the method firewall; attach with flatten: true"},
	"Fetch.*":                       {Action: Refuse, BrowserOnly: true, Why: "browser-level request interception belongs to the guard"},
	"Browser.crash":                 {Action: Refuse, Why: "it would kill the browser for every user"},
	"Browser.crashGpuProcess":       {Action: Refuse, Why: "it would kill the browser's GPU process for every user"},
	"Browser.executeBrowserCommand": {Action: Refuse, Why: "browser commands act outside any page"},
	"Extensions.*":                  {Action: Refuse, Why: "extensions run outside the guard's page rules"},
	"Tethering.*":                   {Action: Refuse, Why: "port forwarding would bypass the egress rules"},
	"PWA.*":                         {Action: Refuse, Why: "installed web apps run outside the guarded contexts"},
	// Browser-wide effects and information, on any session.
	"Memory.simulatePressureNotification":       {Action: Refuse, Why: "memory pressure is simulated for the whole browser, every user's tabs"},
	"Memory.setPressureNotificationsSuppressed": {Action: Refuse, Why: "it suppresses memory pressure for the whole browser"},
	"Memory.getBrowserSamplingProfile":          {Action: Refuse, Why: "it samples the whole browser process"},
	"SystemInfo.getProcessInfo":                 {Action: Refuse, Why: "it lists every process of the browser, every user's renderers"},
	"Browser.getHistograms":                     {Action: Refuse, Why: "histograms count the whole browser's activity"},
	"Browser.getHistogram":                      {Action: Refuse, Why: "histograms count the whole browser's activity"},
	"Browser.getBrowserCommandLine":             {Action: Refuse, Why: "the command line names the guard's proxy and profile"},
	// Chrome's tracing is browser-wide even when started from a page
	// session: an e2e test saw one user's trace record another user's URL.
	"Tracing.start": {Action: Refuse, Why: "Chrome traces the whole browser, so a trace would record other users' tabs"},

	// Refused with some params: the guard sets these itself.
	"Target.createBrowserContext": {Action: RefuseParams, Cap: CapContexts,
		Params: []string{"proxyServer", "proxyBypassList", "originsWithUniversalNetworkAccess"},
		Why:    "the guard sets it (every context uses the guard's egress proxy)"},

	// Permissions that open the local network to pages.
	"Browser.grantPermissions": {Action: CheckPermissions, Why: "local-network permissions would let pages reach loopback and private addresses"},
	"Browser.setPermission":    {Action: CheckPermissions, Why: "local-network permissions would let pages reach loopback and private addresses"},

	// Files: downloads only into the user's directory, uploads only from
	// the upload directory.
	"Browser.setDownloadBehavior": {Action: RewriteDownloads, Why: "downloads go to the user's own directory, or are denied"},
	"Page.setDownloadBehavior":    {Action: RewriteDownloads, Why: "downloads go to the user's own directory, or are denied"},
	"DOM.setFileInputFiles":       {Action: CheckFiles, Why: "only files inside the upload directory may be uploaded"},
	"Input.dispatchDragEvent":     {Action: CheckDropFiles, Controls: CtlInput, Why: "only files inside the upload directory may be dropped"},

	// URLs.
	"Page.navigate":                      {Action: CheckNavigation, Why: whyURL},
	"Target.createTarget":                {Action: CheckURL, Controls: CtlWindow, Cap: CapTabs, Why: whyURL},
	"Network.loadNetworkResource":        {Action: CheckPolicy, Why: "it bypasses request interception, so only allowed URLs may be loaded"},
	"Fetch.continueRequest":              {Action: CheckRedirect, Why: "a request may only be redirected to an allowed URL"},
	"Network.continueInterceptedRequest": {Action: CheckRedirect, Why: "a request may only be redirected to an allowed URL"},

	// Bounded sizes: an emulated viewport of 1e7 pixels at scale 10 and a
	// screenshot of it kept the browser busy past 15 s (issue #20 item 7).
	"Emulation.setDeviceMetricsOverride": {Action: CheckSizes, Sizes: viewportSizes, Controls: CtlInput, Why: "the emulated viewport is bounded"},
	"Emulation.setVisibleSize":           {Action: CheckSizes, Sizes: viewportSizes, Controls: CtlInput, Why: "the emulated viewport is bounded"},
	"Page.captureScreenshot":             {Action: CheckSizes, Sizes: screenshotSizes, Why: "the screenshot clip is bounded"},

	// Answered or changed by the guard.
	"Browser.close":         {Action: CloseOwnTargets, Why: "closes only this connection's own targets"},
	"Target.attachToTarget": {Action: AttachTarget, Why: "the browser's own target is attached as a browser session of the agent's own"},

	// Seen by the dialog handler on their way to Chrome.
	"Page.handleJavaScriptDialog": {Action: DialogsAnswer, Why: "an agent's answer after the guard's is refused, naming --dialog-grace"},
	"Page.enable":                 {Action: DialogsListen, Why: "an agent listening for dialogs gets --dialog-grace to answer them"},
	"Page.disable":                {Action: DialogsUnlisten, Why: "an agent no longer listening for dialogs gets no grace"},
	"Target.detachFromTarget":     {Action: Detach, Controls: CtlDetach, Why: "an agent detached from a page no longer answers its dialogs"},
	"Target.setAutoAttach":        {Action: AutoAttach, Why: "sessions Chrome ends when auto-attach is switched off leave their pages' dialogs settled"},

	// The guard's own domain.
	"Guard.read":      {Action: GuardRead, Why: "the guard reads the page"},
	"Guard.getPolicy": {Action: GuardPolicy, Why: "the guard's policy for this user"},
	"Guard.enable":    {Action: GuardEnable, Why: "Guard.requestBlocked events for this connection"},
	"Guard.disable":   {Action: GuardDisable, Why: "no more Guard events for this connection"},
	"Guard.*":         {Action: Guard, Why: "it is not a Guard method (Guard.getPolicy, Guard.enable, Guard.disable, Guard.read)"},

	// Names of the guard's hidden worlds and binding (cdpguard_...).
	"Page.createIsolatedWorld":              {Action: RefuseReserved, Params: []string{"worldName"}, Why: whyReserved},
	"Page.addScriptToEvaluateOnNewDocument": {Action: RefuseReserved, Params: []string{"worldName"}, Why: whyReserved},
	"Runtime.addBinding":                    {Action: RefuseReserved, Params: []string{"name", "executionContextName"}, Why: whyReserved},
	"Runtime.removeBinding":                 {Action: RefuseReserved, Params: []string{"name", "executionContextName"}, Why: whyReserved},

	// Seen by the human controls (controls.go, docs/decisions/2026-12-01-controls.md).
	"Input.*":                              {Action: Controls, Controls: CtlInput, Why: "an agent's input is trusted by the page: no grant while it is in flight or just answered"},
	"Emulation.setPageScaleFactor":         {Action: Controls, Controls: CtlInput, Why: whyMoves},
	"Target.activateTarget":                {Action: Controls, Controls: CtlWindow, Why: whyMoves},
	"Target.closeTarget":                   {Action: Controls, Controls: CtlWindow, Why: whyMoves},
	"Page.bringToFront":                    {Action: Controls, Controls: CtlWindow, Why: whyMoves},
	"Page.close":                           {Action: Controls, Controls: CtlWindow, Why: whyMoves},
	"Browser.setWindowBounds":              {Action: Controls, Controls: CtlWindow, Why: whyMoves},
	"Debugger.enable":                      {Action: Controls, Controls: CtlDebuggerOn, Why: whyDebugger},
	"Debugger.disable":                     {Action: Controls, Controls: CtlDebuggerOff, Why: whyDebugger},
	"Debugger.getScriptSource":             {Action: Controls, Controls: CtlScriptSource, Why: "the guard's own scripts (controls, reader) are not handed out"},
	"Debugger.setBreakpoint":               {Action: Controls, Controls: CtlCondition, Why: whyCondition},
	"Debugger.setBreakpointByUrl":          {Action: Controls, Controls: CtlCondition, Why: whyCondition},
	"Debugger.setBreakpointOnFunctionCall": {Action: Controls, Controls: CtlCondition, Why: whyCondition},
	"Debugger.setScriptSource":             {Action: Controls, Controls: CtlScriptEdit, Why: "with the controls on, live-editing scripts could rewrite the controls' own code"},
}

// Lookup returns the rule for method on a session; browser tells whether the
// session is browser-level. It does not allocate.
//
// A domain-wide refusal wins over a row for one of its methods, so that
// "Fetch.*" on browser sessions also covers Fetch.continueRequest. On
// browser-level sessions, and for the Browser and SystemInfo domains
// anywhere, a method not on the allowlist (isolation.go) is refused.
// Rule.Scope carries the method's isolation rule. One look-up of the
// method and one of its domain give every column: the firewall row and
// the isolation column are joined once, when the tables are read (rows,
// domains).
func Lookup(method string, browser bool) (Rule, string) {
	var dom domainRow
	i := strings.IndexByte(method, '.')
	if i > 0 {
		dom = domains[method[:i]]
	}
	domApplies := dom.hasRule && (!dom.rule.BrowserOnly || browser)
	if domApplies && dom.rule.Action == Refuse {
		return dom.rule, method[:i] + ".*"
	}
	row := rows[method]
	var r Rule
	var name string
	switch {
	case row.hasRule && (!row.rule.BrowserOnly || browser):
		r, name = row.rule, method
	case domApplies:
		r, name = dom.rule, method[:i]+".*"
	}
	if r.Action == Refuse {
		return r, name
	}
	scope, listed := row.scope, row.listed || dom.listed
	if !listed && (browser || dom.wide) {
		return Rule{Action: Refuse, Why: whyNotListed}, method
	}
	if scope == BrowserContexts && !browser {
		scope = NoIDs
	}
	r.Scope = scope
	return r, name
}

// row is one method's columns of the tables: its firewall row, if it has
// one, and its isolation column (isolation.go), joined once (rows).
type row struct {
	rule    Rule
	hasRule bool
	scope   Scope
	listed  bool // on the browser-level allowlist
}

// domainRow is one domain's columns: its "Domain.*" row, if it has one,
// whether the allowlist applies to it on every session (browserWide) and
// whether all its methods are listed (the Guard domain).
type domainRow struct {
	rule    Rule
	hasRule bool
	wide    bool
	listed  bool
}

// rows joins the firewall table and the isolation table by method, so
// Lookup reads every column of a method with one look-up.
var rows = func() map[string]row {
	m := map[string]row{}
	for k, r := range rules {
		if !strings.HasSuffix(k, ".*") {
			m[k] = row{rule: r, hasRule: true}
		}
	}
	for k, s := range isolation {
		e := m[k]
		e.scope, e.listed = s, true
		m[k] = e
	}
	for k, e := range m {
		if d, _, _ := strings.Cut(k, "."); d == guardDomain {
			e.scope, e.listed = NoIDs, true // the guard's own methods name no ids
			m[k] = e
		}
	}
	return m
}()

// domains indexes the "Domain.*" rows by domain, with the domains the
// allowlist treats as a whole (isolation.go), so Lookup does not build
// strings on the hot path.
var domains = func() map[string]domainRow {
	m := map[string]domainRow{}
	for k, r := range rules {
		if d, ok := strings.CutSuffix(k, ".*"); ok {
			m[d] = domainRow{rule: r, hasRule: true}
		}
	}
	for _, d := range browserWideDomains {
		e := m[d]
		e.wide = true
		m[d] = e
	}
	e := m[guardDomain]
	e.listed = true
	m[guardDomain] = e
	return m
}()

// Rows returns the table's keys, for tests that want a case per row.
func Rows() []string {
	out := make([]string, 0, len(rules))
	for k := range rules {
		out = append(out, k)
	}
	return out
}
