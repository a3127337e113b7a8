package firewall

import "fmt"

// webTypes are the target types of web content: what a page and its
// frames and workers run as. Anything else (browser_ui, Chrome's own
// webviews, "other", types Chrome adds later) is Chrome's own UI or
// unknown, and agents neither see nor reach it: an allowlist, because a
// denylist misses the next type. "browser" is the agent's own
// browser-level session and is handled by the relay, not here.
// docs/decisions/2026-12-01-browser-allowlist-and-web-content.md lists
// what Chromium 156 creates.
var webTypes = map[string]bool{
	"tab":                    true,
	"page":                   true,
	"iframe":                 true,
	"worker":                 true,
	"shared_worker":          true,
	"service_worker":         true,
	"worklet":                true,
	"shared_storage_worklet": true,
	"auction_worklet":        true,
}

// WhyNotWeb is the rule named when a target is hidden or refused.
const WhyNotWeb = "agents see and reach only web content (http(s), about:, data: and blob: pages, their frames and workers)"

// NotWeb returns why a target of type typ at url is not web content, or ""
// when it is. Its URL must have a scheme an agent may open (RefusedScheme):
// chrome:, chrome-untrusted:, devtools:, chrome-extension:,
// chrome-search: and every other scheme are not web content.
func NotWeb(typ, url string) string {
	if !webTypes[typ] {
		return fmt.Sprintf("target type %q", typ)
	}
	if s := RefusedScheme(url); s != "" {
		return fmt.Sprintf("%s: URL", s)
	}
	return ""
}
