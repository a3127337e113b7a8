package cdpguard

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// fakeBrowser is a relay.Transport that answers every guard command with
// an empty result, delivers the events a test gives it, records the
// commands written before Close, and holds the write of one command (the
// judge's answer to a chosen pause) until Close, as a busy pipe would.
type fakeBrowser struct {
	in        chan []byte
	processed chan string // the request id of each event the read loop has finished with
	closed    chan struct{}
	closeOnce sync.Once
	holdID    string        // the requestId whose answer is held until Close
	holding   chan struct{} // closed when that write has started

	mu      sync.Mutex
	last    string   // request id of the event ReadMessage returned last
	written []string // "method requestId" of every command written before Close
	bySess  []sessionWrite
}

// sessionWrite is one command written, with the session it names.
type sessionWrite struct {
	seq             int
	method, session string
}

func newFakeBrowser(holdID string) *fakeBrowser {
	return &fakeBrowser{
		in: make(chan []byte, 1024), processed: make(chan string, 16),
		closed: make(chan struct{}), holdID: holdID, holding: make(chan struct{}),
	}
}

func (f *fakeBrowser) ReadMessage() ([]byte, error) {
	f.mu.Lock()
	if f.last != "" {
		f.processed <- f.last // the read loop is back: the last event was handled
		f.last = ""
	}
	f.mu.Unlock()
	select {
	case m := <-f.in:
		var e struct {
			Params struct {
				RequestID string `json:"requestId"`
			} `json:"params"`
		}
		_ = jsonv2.Unmarshal(m, &e)
		f.mu.Lock()
		f.last = e.Params.RequestID
		f.mu.Unlock()
		return m, nil
	case <-f.closed:
		return nil, errors.New("fake browser: closed")
	}
}

func (f *fakeBrowser) WriteMessage(msg []byte) error {
	select {
	case <-f.closed:
		return errors.New("fake browser: closed")
	default:
	}
	var c struct {
		ID        int64  `json:"id"`
		Method    string `json:"method"`
		SessionID string `json:"sessionId"`
		Params    struct {
			RequestID string `json:"requestId"`
		} `json:"params"`
	}
	if err := jsonv2.Unmarshal(msg, &c); err != nil {
		return err
	}
	if c.Params.RequestID != "" && c.Params.RequestID == f.holdID {
		close(f.holding)
		<-f.closed
		return errors.New("fake browser: closed")
	}
	f.mu.Lock()
	f.written = append(f.written, c.Method+" "+c.Params.RequestID)
	f.bySess = append(f.bySess, sessionWrite{seq: len(f.bySess), method: c.Method, session: c.SessionID})
	f.mu.Unlock()
	result := `{}`
	if c.Method == "Target.getTargets" {
		result = `{"targetInfos":[]}`
	}
	f.in <- []byte(`{"id":` + strconv.FormatInt(c.ID, 10) + `,"result":` + result + `}`)
	return nil
}

func (f *fakeBrowser) Close() error {
	f.closeOnce.Do(func() { close(f.closed) })
	return nil
}

func (f *fakeBrowser) pause(id, url string) {
	f.in <- []byte(`{"method":"Fetch.requestPaused","params":{"requestId":"` + id +
		`","resourceType":"Image","frameId":"F","request":{"url":"` + url + `","method":"GET","headers":{}}}}`)
}

func (f *fakeBrowser) sessions() []sessionWrite {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.bySess)
}

func (f *fakeBrowser) writes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.written...)
}

// TestCloseFailsHeldPausesFirst (#22): Close fails every pause the judge
// holds before it closes the browser connection, even when the judge's
// worker is busy (here: its answer to another pause is stuck on the pipe).
// In attach mode the browser outlives the guard and lets a held request go
// out when the connection closes. Before the fix Close cancelled the judge
// and closed the connection at once: the worker, released by the close,
// found the connection gone and pause B was never answered.
func TestCloseFailsHeldPausesFirst(t *testing.T) {
	g, err := newGuard(Config{Allow: []string{"allowed.test"}, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	fb := newFakeBrowser("A")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.start(ctx, fb); err != nil {
		_ = g.Close()
		t.Fatal(err)
	}
	fb.pause("A", "http://allowed.test/a") // the worker answers A: its write is held
	select {
	case <-fb.holding:
	case <-ctx.Done():
		t.Fatal("the judge never answered A")
	}
	fb.pause("B", "http://allowed.test/b") // held by the judge, behind A
	for id := ""; id != "B"; {
		select {
		case id = <-fb.processed:
		case <-ctx.Done():
			t.Fatal("the read loop never handled B")
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	for _, w := range fb.writes() {
		if w == "Fetch.failRequest B" {
			return
		}
		if w == "Fetch.continueRequest B" {
			t.Fatalf("B continued at close: %v", fb.writes())
		}
	}
	t.Fatalf("pause B was not failed before the browser connection closed; written: %v", fb.writes())
}
