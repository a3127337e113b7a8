package controls

import (
	"context"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

// notDrawnBrowser answers every push as js/controls_update.js does in a
// world where the controls script never ran: false.
type notDrawnBrowser struct {
	nopBrowser
	mu     sync.Mutex
	pushes int
}

func (b *notDrawnBrowser) Call(_ context.Context, _, method string, _ any) (jsonv2.Value, error) {
	if method != "Runtime.callFunctionOn" {
		return jsonv2.Value("{}"), nil
	}
	b.mu.Lock()
	b.pushes++
	b.mu.Unlock()
	return jsonv2.Value(`{"result":{"type":"boolean","value":false}}`), nil
}

// noGrants grants nothing and reaches nothing.
type noGrants struct{}

func (noGrants) GrantHost(string, string, string) (string, error) { return "", nil }
func (noGrants) Grantable(string, string) error                   { return nil }
func (noGrants) Reachable(string) []string                        { return nil }

// TestPushNotDrawnIsRetried (#22, the missing Allow button): the events a
// failing red-team page gave the guard (TestRedTeamControls, 2026-12-02),
// replayed. The page was released before its Page.enable was in effect:
// Chrome made the controls world in the explanation page's document
// (context 4) but ran no script in it, and sent no Page.frameNavigated.
// The push into context 4 answered false, which the controls took for a
// drawn page: no retry, no log, no button. A push that draws nothing is
// now a failed push, retried up to pushRetries and logged.
func TestPushNotDrawnIsRetried(t *testing.T) {
	c := newTest(t)
	b := &notDrawnBrowser{}
	c.d.Browser, c.d.Grants = b, noGrants{}
	const world = "cdpguard_controls_test"
	for _, ev := range []struct{ method, params string }{
		{"Runtime.executionContextCreated", `{"context":{"id":2,"origin":"://","name":"","uniqueId":"a.2","auxData":{"isDefault":true,"type":"default","frameId":"T"}}}`},
		{"Runtime.executionContextCreated", `{"context":{"id":1,"origin":"://","name":"` + world + `","uniqueId":"a.1","auxData":{"isDefault":false,"type":"isolated","frameId":"T"}}}`},
		{"Runtime.executionContextsCleared", `{}`},
		{"Runtime.executionContextCreated", `{"context":{"id":3,"origin":"http://rc-pause.test:40883","name":"","uniqueId":"b.3","auxData":{"isDefault":true,"type":"default","frameId":"T"}}}`},
		{"Runtime.executionContextCreated", `{"context":{"id":4,"origin":"://","name":"` + world + `","uniqueId":"b.4","auxData":{"isDefault":false,"type":"isolated","frameId":"T"}}}`},
	} {
		c.OnEvent(&cdpmsg.Envelope{SessionID: "S", Method: ev.method, Params: jsonv2.Value(ev.params)})
	}
	c.Blocked("T", "http://rc-pause.test:40883/", "not on the allowlist", true)
	c.flush(context.Background())
	p := c.pages["T"]
	if b.pushes != 1 || p.ctxID != 4 {
		t.Fatalf("want one push into context 4, got %d pushes, context %d", b.pushes, p.ctxID)
	}
	if !c.dirty["T"] || p.failedPushes != 1 {
		t.Fatalf("a push the world did not draw counted as done: dirty %v, failed pushes %d", c.dirty["T"], p.failedPushes)
	}
	for range pushRetries + 2 {
		c.flush(context.Background())
	}
	if b.pushes != 1+pushRetries || c.dirty["T"] {
		t.Fatalf("want %d pushes, then none: got %d, dirty %v", 1+pushRetries, b.pushes, c.dirty["T"])
	}
}
