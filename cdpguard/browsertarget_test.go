package cdpguard

import (
	"testing"

	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// TestBrowserTarget: only the browser's own target id is rewritten into
// an agent's own browser session (browser-type attachments are renamed
// by internal/isolation: TestBrowserTargetEvents).
func TestBrowserTarget(t *testing.T) {
	g := &Guard{}
	cmd := relay.Command{Method: "Target.attachToTarget", Params: []byte(`{"targetId":"B1","flatten":true}`)}
	if _, done := g.attachBrowserTarget(cmd, firewall.AttachTarget); done {
		t.Fatal("rewrote an attach before the browser's id is known")
	}
	id := "B1"
	g.about.target.Store(&id)
	v, done := g.attachBrowserTarget(cmd, firewall.AttachTarget)
	if !done || v.Method != "Target.attachToBrowserTarget" || string(v.Params) != "{}" {
		t.Fatalf("attach to the browser target: %+v %v", v, done)
	}
	if _, done := g.attachBrowserTarget(relay.Command{Method: "Target.attachToTarget", Params: []byte(`{"targetId":"P1"}`)}, firewall.AttachTarget); done {
		t.Fatal("rewrote an attach to a page")
	}
	if !g.isBrowserTarget("B1") || g.isBrowserTarget("other-host") {
		t.Fatal("isBrowserTarget")
	}
}
