package cdptest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/coder/websocket"
)

// fakeBrowser answers every command: Fail with an error, Close by closing
// the connection with a reason, anything else with {"ok":true} after an
// event on the same session.
func fakeBrowser(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer func() { _ = c.CloseNow() }()
		for {
			_, b, err := c.Read(r.Context())
			if err != nil {
				return
			}
			var cmd struct {
				ID        int64  `json:"id"`
				SessionID string `json:"sessionId"`
				Method    string `json:"method"`
			}
			_ = jsonv2.Unmarshal(b, &cmd)
			var out []string
			switch cmd.Method {
			case "Fail":
				out = []string{`{"id":` + itoa(cmd.ID) + `,"error":{"code":-32000,"message":"nope"}}`}
			case "Close":
				_ = c.Close(websocket.StatusPolicyViolation, "bye")
				return
			default:
				out = []string{
					`{"method":"Test.event","sessionId":"` + cmd.SessionID + `","params":{"n":1}}`,
					`not json`,
					`{"id":` + itoa(cmd.ID) + `,"sessionId":"` + cmd.SessionID + `","result":{"ok":true}}`,
				}
			}
			for _, o := range out {
				if c.Write(r.Context(), websocket.MessageText, []byte(o)) != nil {
					return
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func itoa(n int64) string { b, _ := jsonv2.Marshal(n); return string(b) }

func TestClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seen := make(chan *Message, 16)
	c, err := Dial(ctx, fakeBrowser(t), Options{OnMessage: func(m *Message) { seen <- m }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	events, unsub := c.Subscribe("S1", "Test.event")
	defer unsub()
	res, err := c.Call(ctx, "S1", "Do.it", map[string]any{"x": 1})
	if err != nil || string(res) != `{"ok":true}` {
		t.Fatalf("Call = %s, %v", res, err)
	}
	if ev, err := c.Wait(ctx, events, "Test.event"); err != nil || string(ev) != `{"n":1}` {
		t.Fatalf("event = %s, %v", ev, err)
	}
	var raw []string
	for len(raw) < 3 {
		raw = append(raw, string((<-seen).Raw))
	}
	if raw[1] != "not json" {
		t.Errorf("OnMessage saw %q, want every frame, the undecodable one too", raw)
	}
	_, err = c.Call(ctx, "", "Fail", nil)
	var ce *Error
	if !errors.As(err, &ce) || ce.Message != "nope" {
		t.Fatalf("Fail: %v, want a CDP error", err)
	}
	if _, err := c.Call(ctx, "", "Close", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Close: %v, want ErrClosed", err)
	}
	<-c.Done()
	if code, reason := c.CloseStatus(); code != websocket.StatusPolicyViolation || reason != "bye" {
		t.Errorf("CloseStatus = %d %q", code, reason)
	}
	if _, err := c.Call(ctx, "", "Do.it", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after close: %v, want ErrClosed", err)
	}
}

// TestRawAndRecorded: frames of the caller's own (CallID), the inbox of
// every frame (Next), the event record (Events, WaitEvent), and a client
// that stops reading and resumes (Stall).
func TestRawAndRecorded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stall := make(chan struct{})
	c, err := Dial(ctx, fakeBrowser(t), Options{Record: true, Inbox: 16, Stall: stall})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := c.CallID(5*time.Second, 7, "S1", "Do.it", nil)
	if err != nil || string(m.RawID) != "7" || m.ID != 7 || string(m.Result) != `{"ok":true}` {
		t.Fatalf("CallID = %+v, %v", m, err)
	}
	if _, err := c.CallID(5*time.Second, 8, "", "Fail", nil); err == nil || !strings.Contains(err.Error(), "Fail: nope") {
		t.Fatalf("CallID of a failing method: %v", err)
	}
	if ev, ok := c.WaitEvent(time.Second, func(m Message) bool { return m.Method == "Test.event" }); !ok || ev.SessionID != "S1" {
		t.Fatalf("WaitEvent = %+v, %v", ev, ok)
	}
	if n := len(c.Events()); n != 1 || !strings.Contains(c.EventsText(), `S1 Test.event {"n":1}`) {
		t.Fatalf("events = %d %q, want the one Test.event of Do.it", n, c.EventsText())
	}
	if err := c.WriteFrame(websocket.MessageText, []byte(`{"id":11,"sessionId":"S2","method":"Do.it"}`)); err != nil {
		t.Fatal(err)
	}
	if m, ok := c.Next(5 * time.Second); !ok || m.Method != "Test.event" || m.SessionID != "S2" {
		t.Fatalf("Next = %+v %v, want the event before the reply", m, ok)
	}
	close(stall)
	if err := c.WriteFrame(websocket.MessageText, []byte(`{"id":9,"method":"Do.it"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Stalled():
	case <-time.After(5 * time.Second):
		t.Fatal("the client did not stall at its next frame")
	}
	c.Resume()
	if m, err := c.CallID(5*time.Second, 10, "", "Do.it", nil); err != nil || m.ID != 10 {
		t.Fatalf("after Resume: %+v %v", m, err)
	}
}
