package mcpserver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
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
