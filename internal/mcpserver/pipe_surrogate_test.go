package mcpserver

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
)

// TestPipeLoneSurrogate: Chrome writes a page's string cut inside an emoji
// as a lone surrogate escape ("x\ud800y"): a reply holding one answers its
// call (the string reads with U+FFFD), and a dialog whose message holds one
// reaches the tools. The pipe read the browser's JSON strictly and dropped
// both: the call waited out its whole bound, and the page's alert went
// unseen (browser_navigate ran its 30 s, browser_handle_dialog found none).
func TestPipeLoneSurrogate(t *testing.T) {
	evs := make(chan any, 4)
	p := NewPipe(func(_ target.SessionID, ev any) { evs <- ev })
	defer p.Close()
	g := p.AgentSide()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	var res result
	ended := make(chan error, 1)
	go func() { ended <- p.Call(ctx, "S1", "Runtime.evaluate", nil, &res) }()
	b, err := g.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		ID int64 `json:"id"`
	}
	if err := jsonv2.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if err := g.Write(ctx, []byte(`{"id":`+jsonInt(m.ID)+`,"sessionId":"S1","result":{"result":{"type":"string","value":"x\ud800y"}}}`)); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; err != nil || res.Result.Value != "x\uFFFDy" {
		t.Fatalf("the call answered with a lone surrogate: %v %q", err, res.Result.Value)
	}
	if err := g.Write(ctx, []byte(`{"method":"Page.javascriptDialogOpening","sessionId":"S1","params":{"url":"http://a.test/","frameId":"F1","message":"\ud83d","type":"alert","hasBrowserHandler":false,"defaultPrompt":""}}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-evs:
		if d, ok := ev.(*page.EventJavascriptDialogOpening); !ok || d.Type != page.DialogTypeAlert {
			t.Fatalf("event = %#v, want the dialog", ev)
		}
	case <-ctx.Done():
		t.Fatal("the dialog holding a lone surrogate never reached the tools")
	}
}
