// Package firewall holds the method firewall: what cdpguard does with each
// CDP method an agent sends. The table is data, in this one file, so that a
// reviewer can read the whole policy at once; methods not in it pass (Chrome
// adds domains often, and refusing the unknown would break clients).
package firewall

import "strings"

// Action is what happens to a command.
type Action int

const (
	// Pass forwards the command unchanged (the zero value: unknown methods pass).
	Pass Action = iota
	// Refuse answers with a CDP error naming the rule; nothing is forwarded.
	Refuse
	// CheckURL refuses the command if its url param has a scheme that must never be opened by an agent.
	CheckURL
	// CheckPolicy refuses the command if its url param is set and the
	// allowlist does not allow it (an agent's own interception must not
	// redirect a request the guard already judged).
	CheckPolicy
	// Guard marks the guard's own domain, answered by cdpguard.
	Guard
	// Rewrite marks methods the guard answers or changes itself.
	Rewrite
)

// Rule is one row of the table.
type Rule struct {
	Action Action
	// BrowserOnly applies the rule only on browser-level sessions.
	BrowserOnly bool
	// Why is the reason given to the agent.
	Why string
}

// rules is the firewall table. Keys are exact methods, or "Domain.*" for a
// whole domain.
var rules = map[string]Rule{
	"Target.exposeDevToolsProtocol": {Action: Refuse, Why: "it would give page scripts a browser-level channel"},
	"Fetch.*":                       {Action: Refuse, BrowserOnly: true, Why: "browser-level request interception belongs to the guard"},
	"Browser.crash":                 {Action: Refuse, Why: "it would kill the browser for every user"},
	"Browser.crashGpuProcess":       {Action: Refuse, Why: "it would kill the browser's GPU process for every user"},
	"Browser.executeBrowserCommand": {Action: Refuse, Why: "browser commands act outside any page"},
	"Extensions.*":                  {Action: Refuse, Why: "extensions run outside the guard's page rules"},
	"Tethering.*":                   {Action: Refuse, Why: "port forwarding would bypass the egress rules"},
	"PWA.*":                         {Action: Refuse, Why: "installed web apps run outside the guarded contexts"},
	"Page.navigate":                 {Action: CheckURL, Why: "only network, about:blank and data: URLs may be opened"},
	"Target.createTarget":           {Action: CheckURL, Why: "only network, about:blank and data: URLs may be opened"},
	"Network.loadNetworkResource":   {Action: CheckURL, Why: "only network URLs may be loaded"},
	"Fetch.continueRequest":         {Action: CheckPolicy, Why: "a request may only be redirected to an allowed URL"},
	"Browser.close":                 {Action: Rewrite, Why: "closes only this connection's own targets"},
	"Page.handleJavaScriptDialog":   {Action: Rewrite, Why: "a dialog the guard already answered is reported as handled"},
	"Guard.*":                       {Action: Guard, Why: "the guard's own domain"},
}

// Lookup returns the rule for method on a session; browser tells whether the
// session is browser-level. It does not allocate.
//
// A domain-wide refusal wins over a row for one of its methods, so that
// "Fetch.*" on browser sessions also covers Fetch.continueRequest.
func Lookup(method string, browser bool) (Rule, string) {
	if i := strings.IndexByte(method, '.'); i > 0 {
		if r, ok := domains[method[:i]]; ok && r.Action == Refuse && (!r.BrowserOnly || browser) {
			return r, method[:i] + ".*"
		}
	}
	if r, ok := rules[method]; ok && (!r.BrowserOnly || browser) {
		return r, method
	}
	if i := strings.IndexByte(method, '.'); i > 0 {
		if r, ok := domains[method[:i]]; ok && (!r.BrowserOnly || browser) {
			return r, method[:i] + ".*"
		}
	}
	return Rule{}, ""
}

// domains indexes the "Domain.*" rows by domain, so Lookup does not build
// strings on the hot path.
var domains = func() map[string]Rule {
	m := map[string]Rule{}
	for k, r := range rules {
		if d, ok := strings.CutSuffix(k, ".*"); ok {
			m[d] = r
		}
	}
	return m
}()

// neverSchemes are URL schemes an agent may never open.
var neverSchemes = []string{"file:", "chrome:", "chrome-extension:", "chrome-untrusted:", "devtools:", "view-source:", "javascript:", "filesystem:", "chrome-search:"}

// ForbiddenScheme returns the scheme of u if an agent may never open it.
func ForbiddenScheme(u string) string {
	s := strings.ToLower(strings.TrimSpace(u))
	for _, p := range neverSchemes {
		if strings.HasPrefix(s, p) {
			return strings.TrimSuffix(p, ":")
		}
	}
	return ""
}
