package cdpguard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cdpguard/cdpguard/internal/relay"
)

// sentCommand is one command the guard wrote to the browser.
type sentCommand struct {
	Method    string `json:"method"`
	SessionID string `json:"sessionId"`
}

// recorder is a browser transport that keeps the commands written to it, so
// that tests can count the guard's browser round trips.
type recorder struct {
	relay.Transport
	mu   sync.Mutex
	sent []sentCommand
	// after, when set, returns messages to hand the guard right after msg
	// from the browser (a test's late events).
	after  func(msg []byte) [][]byte
	queued [][]byte
}

func (r *recorder) ReadMessage() ([]byte, error) {
	r.mu.Lock()
	if len(r.queued) > 0 {
		m := r.queued[0]
		r.queued = r.queued[1:]
		r.mu.Unlock()
		return m, nil
	}
	after := r.after
	r.mu.Unlock()
	msg, err := r.Transport.ReadMessage()
	if err == nil && after != nil {
		if extra := after(msg); len(extra) > 0 {
			r.mu.Lock()
			r.queued = append(r.queued, extra...)
			r.mu.Unlock()
		}
	}
	return msg, err
}

func (r *recorder) WriteMessage(msg []byte) error {
	var c sentCommand
	_ = json.Unmarshal(msg, &c)
	r.mu.Lock()
	r.sent = append(r.sent, c)
	r.mu.Unlock()
	return r.Transport.WriteMessage(msg)
}

// since returns the commands sent on session after the first n.
func (r *recorder) since(n int, session string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.sent[n:] {
		if session == "*" || c.SessionID == session {
			out = append(out, c.Method)
		}
	}
	return out
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sent)
}

// launchRecorded launches a guard whose browser connection is recorded.
func launchRecorded(t testing.TB, cfg Config) (*Guard, *recorder) {
	t.Helper()
	needBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if cfg.Allow == nil {
		cfg.Allow = []string{"allowed.test"}
	}
	rec := &recorder{}
	g, err := launchGuard(ctx, cfg, launchOptions{transport: func(c relay.Transport) relay.Transport {
		rec.Transport = c
		return rec
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g, rec
}

// rawAgent is a minimal CDP client over the guard's WebSocket.
type rawAgent struct {
	c    *websocket.Conn
	next int64
}

func dialAgent(ctx context.Context, t testing.TB, g *Guard) *rawAgent {
	t.Helper()
	c, _, err := websocket.Dial(ctx, g.WebSocketURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(-1)
	t.Cleanup(func() { _ = c.CloseNow() })
	return &rawAgent{c: c}
}

// send writes a command and returns its id.
func (a *rawAgent) send(ctx context.Context, session, method string, params any) (int64, error) {
	a.next++
	msg, err := json.Marshal(map[string]any{"id": a.next, "sessionId": session, "method": method, "params": params})
	if err != nil {
		return 0, err
	}
	return a.next, a.c.Write(ctx, websocket.MessageText, msg)
}

// read reads messages until want returns true for one.
func (a *rawAgent) read(ctx context.Context, want func(id int64, method string, result, errRaw json.RawMessage) bool) error {
	for {
		_, b, err := a.c.Read(ctx)
		if err != nil {
			return err
		}
		var r struct {
			ID     int64           `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(b, &r) == nil && want(r.ID, r.Method, r.Result, r.Error) {
			return nil
		}
	}
}

// call sends a command and reads up to its reply (events are dropped).
func (a *rawAgent) call(ctx context.Context, session, method string, params any, out any) error {
	id, err := a.send(ctx, session, method, params)
	if err != nil {
		return err
	}
	var res, errRaw json.RawMessage
	if err := a.read(ctx, func(got int64, _ string, r, e json.RawMessage) bool {
		res, errRaw = r, e
		return got == id
	}); err != nil {
		return err
	}
	if errRaw != nil {
		return fmt.Errorf("%s: %s", method, errRaw)
	}
	if out != nil {
		return json.Unmarshal(res, out)
	}
	return nil
}

// testPageEnableOneRoundTrip (a subtest of TestRecordedGuard): an agent's Page.enable costs one browser
// round trip (the command itself); the guard's dialog bookkeeping takes
// the session's target from the agent's own record rather than asking
// Chrome (Target.getTargetInfo), and is still in place: a dialog on that
// page waits for this agent.
func testPageEnableOneRoundTrip(t *testing.T, g *Guard, rec *recorder) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := dialAgent(ctx, t, g)
	var created struct {
		TargetID string `json:"targetId"`
	}
	if err := a.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &created); err != nil {
		t.Fatal(err)
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := a.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached); err != nil {
		t.Fatal(err)
	}
	n := rec.count()
	if err := a.call(ctx, attached.SessionID, "Page.enable", nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := rec.since(n, attached.SessionID); len(got) != 1 || got[0] != "Page.enable" {
		t.Errorf("Page.enable sent %v to the browser on the agent's session; want [Page.enable]", got)
	}
	// The bookkeeping holds: a dialog on the page waits for this agent,
	// whose answer reaches Chrome (with nobody listening the guard would
	// have dismissed it at once, and the answer would be refused).
	if _, err := a.send(ctx, attached.SessionID, "Runtime.evaluate", map[string]any{"expression": "alert(1)"}); err != nil {
		t.Fatal(err)
	}
	if err := a.read(ctx, func(_ int64, m string, _, _ json.RawMessage) bool { return m == "Page.javascriptDialogOpening" }); err != nil {
		t.Fatal(err)
	}
	if err := a.call(ctx, attached.SessionID, "Page.handleJavaScriptDialog", map[string]any{"accept": true}, nil); err != nil {
		t.Errorf("the agent's answer to a dialog on its page: %v", err)
	}
}

// TestRecordedGuard runs the tests that read the guard's browser
// connection on one guard (one browser launch), with controls on.
func TestRecordedGuard(t *testing.T) {
	var evilHits atomic.Int64
	evil := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { evilHits.Add(1) }))
	defer evil.Close()
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "evil.test", 1)
	g, rec := launchRecorded(t, Config{Controls: true, HostMap: []string{"*.test=127.0.0.1"}})
	t.Run("page enable one round trip", func(t *testing.T) { testPageEnableOneRoundTrip(t, g, rec) })
	t.Run("controls late events fresh tab", func(t *testing.T) { testControlsLateEventsFreshTab(t, g, rec, evilURL, &evilHits) })
}
