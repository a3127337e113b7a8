package mcpserver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"
)

// TestDetachEndsCalls: a call in flight on a session that detaches ends
// with ErrTargetClosed, since Chrome never answers it (the relay drops it
// too); a call on another session stays in flight.
func TestDetachEndsCalls(t *testing.T) {
	p := NewPipe(nil)
	defer p.Close()
	g := p.AgentSide()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ended := make(chan error, 2)
	go func() { ended <- p.Call(ctx, "S1", "Runtime.evaluate", nil, nil) }()
	go func() { ended <- p.Call(ctx, "S2", "Runtime.evaluate", nil, nil) }()
	ids := map[string]int64{}
	for range 2 {
		b, err := g.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			ID        int64  `json:"id"`
			SessionID string `json:"sessionId"`
		}
		if err := jsonv2.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		ids[m.SessionID] = m.ID
	}
	if err := g.Write(ctx, []byte(`{"method":"Target.detachedFromTarget","params":{"sessionId":"S1","targetId":"T1"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; !errors.Is(err, ErrTargetClosed) {
		t.Fatalf("the call on the detached session ended with %v, want ErrTargetClosed", err)
	}
	select {
	case err := <-ended:
		t.Fatalf("the call on the other session ended too: %v", err)
	default:
	}
	if err := g.Write(ctx, []byte(`{"id":`+jsonInt(ids["S2"])+`,"sessionId":"S2","result":{}}`)); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; err != nil {
		t.Fatalf("the call on S2: %v", err)
	}
}

func jsonInt(n int64) string { b, _ := jsonv2.Marshal(n); return string(b) }

// TestPipeDecodesEvents: the pipe hands the tools each event decoded once
// into its cdproto type, the guard's Guard.requestBlocked into a
// blockEntry, with the session's typed id; an event cdproto does not know
// reaches no handler, and a subscriber still gets the raw params.
func TestPipeDecodesEvents(t *testing.T) {
	type got struct {
		session target.SessionID
		ev      any
	}
	evs := make(chan got, 8)
	p := NewPipe(func(s target.SessionID, ev any) { evs <- got{s, ev} })
	defer p.Close()
	raw, stop := p.Subscribe("S1", "Network.requestWillBeSent")
	defer stop()
	g := p.AgentSide()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, m := range []string{
		`{"method":"Network.requestWillBeSent","sessionId":"S1","params":{"requestId":"R1","loaderId":"L1","documentURL":"http://a.test/","request":{"url":"http://a.test/x","method":"GET","headers":{},"initialPriority":"High","referrerPolicy":"no-referrer"},"timestamp":1,"wallTime":1,"initiator":{"type":"other"},"redirectHasExtraInfo":false,"type":"Fetch"}}`,
		`{"method":"Nonesuch.happened","sessionId":"S1","params":{}}`,
		`{"method":"Guard.requestBlocked","params":{"url":"http://b.test/","reason":"not in the allowlist","resourceType":"Document","frameId":"F1","topLevel":true}}`,
	} {
		if err := g.Write(ctx, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	first := <-evs
	req, ok := first.ev.(*network.EventRequestWillBeSent)
	if !ok || first.session != "S1" || req.RequestID != "R1" || req.Request == nil || req.Request.URL != "http://a.test/x" {
		t.Fatalf("first event = %q %#v, want S1's *network.EventRequestWillBeSent for R1", first.session, first.ev)
	}
	second := <-evs // the unknown event is skipped
	b, ok := second.ev.(*blockEntry)
	if !ok || second.session != "" || b.URL != "http://b.test/" || b.FrameID != "F1" || !b.TopLevel {
		t.Fatalf("second event = %q %#v, want the browser session's *blockEntry for http://b.test/", second.session, second.ev)
	}
	select {
	case e := <-evs:
		t.Fatalf("a third event reached the handler: %#v", e.ev)
	default:
	}
	select {
	case v := <-raw:
		if !strings.Contains(string(v), `"R1"`) {
			t.Fatalf("the subscriber got %s, want the raw params of R1", v)
		}
	default:
		t.Fatal("the subscriber got nothing")
	}
}
