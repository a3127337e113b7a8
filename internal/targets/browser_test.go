package targets

import (
	"testing"

	"github.com/cdpguard/cdpguard/internal/relay"
)

// TestBrowserTarget: only the browser's own target id is rewritten into
// an agent's own browser session (browser-type attachments are renamed
// by internal/isolation: TestBrowserTargetEvents).
func TestBrowserTarget(t *testing.T) {
	r := New(Deps{})
	cmd := relay.Command{Method: "Target.attachToTarget", Params: []byte(`{"targetId":"B1","flatten":true}`)}
	if _, done := r.AttachBrowser(cmd); done {
		t.Fatal("rewrote an attach before the browser's id is known")
	}
	id := "B1"
	r.browser.Store(&id)
	v, done := r.AttachBrowser(cmd)
	if !done || v.Method != "Target.attachToBrowserTarget" || string(v.Params) != "{}" {
		t.Fatalf("attach to the browser target: %+v %v", v, done)
	}
	if _, done := r.AttachBrowser(relay.Command{Method: "Target.attachToTarget", Params: []byte(`{"targetId":"P1"}`)}); done {
		t.Fatal("rewrote an attach to a page")
	}
	if _, done := r.AttachBrowser(relay.Command{Method: "Target.attachToTarget"}); done {
		t.Fatal("rewrote an attach naming no target")
	}
	if r.BrowserTarget() != "B1" {
		t.Fatal("BrowserTarget")
	}
}
