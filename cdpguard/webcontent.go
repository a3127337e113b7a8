package cdpguard

import (
	"fmt"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/firewall"
)

// markWeb records whether a target is web content (firewall.NotWeb). When
// a target an agent holds a session on turns into something else (a tab
// navigated to chrome://settings by a page's own link, say), changed is
// true and every agent session on it is ended with the reason. It runs on
// the mux read loop: the sends go to the guard's outbox goroutine.
func (g *Guard) markWeb(t targetInfo, changed bool) {
	if t.Type == "browser" {
		return
	}
	why := firewall.NotWeb(t.Type, t.URL)
	g.pages.MarkWeb(t.TargetID, why)
	g.log.Debug("target", "id", t.TargetID, "type", t.Type, "url", clip.String(t.URL), "context", t.BrowserContextID, "notWeb", why)
	if why == "" || !changed {
		return
	}
	reason := cdpmsg.Refusal("", fmt.Sprintf("target %s is no longer web content (%s %s): %s", t.TargetID, why, clip.String(t.URL), firewall.WhyNotWeb))
	id := t.TargetID
	g.fx.Add(func() { g.agents.Evict(id, reason) })
}

// notWebRefusal returns the refusal of a command naming a target that is
// not web content, or "".
func (g *Guard) notWebRefusal(method, targetID string) string {
	return g.iso.NotWebRefusal(method, targetID)
}
