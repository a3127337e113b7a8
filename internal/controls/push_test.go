package controls

import (
	"context"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/js"
)

// notDrawnBrowser answers pushes as js/controls_update.js does in a world
// where the controls script never ran (false) until the guard evaluates
// the script there, and gives the main frame's URL for Page.getFrameTree.
type notDrawnBrowser struct {
	nopBrowser
	url string

	mu        sync.Mutex
	script    bool  // the controls script was evaluated in the world
	pushes    int   // pushes answered
	explained []any // whether each push carried the explained block
}

func (b *notDrawnBrowser) Call(_ context.Context, _, method string, params any) (jsonv2.Value, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch method {
	case "Runtime.evaluate":
		m := params.(map[string]any)
		b.script = m["uniqueContextId"] == "b.4" && m["expression"] == js.Controls
	case "Page.getFrameTree":
		return jsonv2.Value(`{"frameTree":{"frame":{"id":"T","url":"` + b.url + `"}}}`), nil
	case "Runtime.callFunctionOn":
		b.pushes++
		st := params.(map[string]any)["arguments"].([]any)[0].(map[string]any)["value"].(state)
		b.explained = append(b.explained, st.Explain != nil)
		if b.script {
			return jsonv2.Value(`{"result":{"type":"boolean","value":true}}`), nil
		}
		return jsonv2.Value(`{"result":{"type":"boolean","value":false}}`), nil
	}
	return jsonv2.Value("{}"), nil
}

// noGrants grants nothing and reaches nothing.
type noGrants struct{}

func (noGrants) GrantHost(string, string, string) (string, error) { return "", nil }
func (noGrants) Grantable(string, string) error                   { return nil }
func (noGrants) Reachable(string) []string                        { return nil }

// failingPage replays the events a failing red-team page gave the guard
// (TestTimed/RedTeamControls, 2026-12-02): Chrome made the controls world in the
// explanation page's document (context 4) but ran no script in it, and
// sent no Page.frameNavigated for that document.
func failingPage(t *testing.T, b *notDrawnBrowser) *Controls {
	c := newTest(t)
	c.d.Browser, c.d.Grants, c.d.ExplainBlocked = b, noGrants{}, true
	const world = "cdpguard_controls_test"
	c.Blocked("T", "http://rc-pause.test:40883/", "not on the allowlist", true)
	for _, ev := range []struct{ method, params string }{
		{"Runtime.executionContextCreated", `{"context":{"id":2,"origin":"://","name":"","uniqueId":"a.2","auxData":{"isDefault":true,"type":"default","frameId":"T"}}}`},
		{"Runtime.executionContextCreated", `{"context":{"id":1,"origin":"://","name":"` + world + `","uniqueId":"a.1","auxData":{"isDefault":false,"type":"isolated","frameId":"T"}}}`},
		{"Runtime.executionContextsCleared", `{}`},
		{"Runtime.executionContextCreated", `{"context":{"id":3,"origin":"http://rc-pause.test:40883","name":"","uniqueId":"b.3","auxData":{"isDefault":true,"type":"default","frameId":"T"}}}`},
		{"Runtime.executionContextCreated", `{"context":{"id":4,"origin":"://","name":"` + world + `","uniqueId":"b.4","auxData":{"isDefault":false,"type":"isolated","frameId":"T"}}}`},
	} {
		e := &cdpmsg.Envelope{SessionID: "S", Method: ev.method, Params: jsonv2.Value(ev.params)}
		if ev.method == "Runtime.executionContextsCleared" {
			c.OnContextsCleared(e)
		} else {
			c.OnContextCreated(e)
		}
	}
	return c
}

// TestNotDrawnIsRepaired (#22, the missing Allow button): the push into
// context 4 answered false, which the controls took for a drawn page (no
// retry, no log), and the explanation page never counted as committed: no
// button, ever. A push that draws nothing now has the guard evaluate the
// controls script in that world and ask Chrome for the main frame's
// document; the explanation page's URL commits the explained block, and
// the next push draws the button.
func TestNotDrawnIsRepaired(t *testing.T) {
	b := &notDrawnBrowser{url: "http://rc-pause.test:40883/"}
	c := failingPage(t, b)
	for range 3 {
		c.flush(context.Background())
	}
	p := c.state("T")
	if !b.script || !p.explain.committed || b.pushes != 2 || b.explained[1] != true || p.failedPushes != 0 || c.isDirty("T") {
		t.Fatalf("not repaired: script %v, committed %v, pushes %d (explained %v), failed %d, dirty %v",
			b.script, p.explain.committed, b.pushes, b.explained, p.failedPushes, c.isDirty("T"))
	}
}

// TestNotDrawnOtherDocument: the repair commits nothing when the main
// frame shows another document than the explained URL; the world still
// gets its script and the badge.
func TestNotDrawnOtherDocument(t *testing.T) {
	b := &notDrawnBrowser{url: "http://elsewhere.test/"}
	c := failingPage(t, b)
	for range 3 {
		c.flush(context.Background())
	}
	p := c.state("T")
	if !b.script || p.explain.committed || b.pushes != 2 || b.explained[1] != false {
		t.Fatalf("script %v, committed %v, pushes %d (explained %v)", b.script, p.explain.committed, b.pushes, b.explained)
	}
}
