package browser

import (
	"bufio"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/fetchdomain"
)

// failSender records what a Judge sends.
type failSender struct {
	mu   sync.Mutex
	sent []string
}

func (s *failSender) Send(session, method string, params any) error {
	b, ok := params.([]byte) // the judge encodes its params itself
	if !ok {
		var err error
		if b, err = jsonv2.Marshal(params); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.sent = append(s.sent, session+" "+method+" "+string(b))
	s.mu.Unlock()
	return nil
}

// TestPipeConnOversizePaused: an oversize Fetch.requestPaused (the skipping
// path and the within-buffer path) reaches the reader as a requestPaused
// with its requestId and sessionId, which the guard's judge fails at once
// (Fetch.failRequest BlockedByClient) instead of leaving the request held;
// other oversize events are still dropped and the messages after it arrive.
func TestPipeConnOversizePaused(t *testing.T) {
	c, _, peerW := pipePair(t)
	c.maxMsg = 1000
	var kinds []string // read on this goroutine only: ReadMessage calls onOversize
	c.onOversize = func(kind string) { kinds = append(kinds, kind) }
	big := strings.Repeat("x", 3*pipeReadBuffer)
	small := strings.Repeat("y", 2000)
	paused := func(id, body, session string) string {
		m := `{"method":"Fetch.requestPaused","params":{"requestId":"` + id + `","request":{"url":"http://allowed.test/","method":"POST","headers":{},"postData":"` + body + `"},"frameId":"F","resourceType":"XHR"}`
		if session != "" {
			m += `,"sessionId":"` + session + `"`
		}
		return m + "}"
	}
	msgs := []string{
		paused("interception-job-1.0", big, "AB12"),
		`{"method":"Network.dataReceived","params":{"v":"` + big + `"},"sessionId":"AB12"}`,
		paused("interception-job-2.0", small, ""),
		`{"id":9,"result":{}}`,
	}
	go func() {
		w := bufio.NewWriter(peerW)
		for _, m := range msgs {
			_, _ = w.WriteString(m)
			_ = w.WriteByte(0)
		}
		_ = w.Flush()
		_ = peerW.Close()
	}()
	send := &failSender{}
	j := fetchdomain.New(send, fetchdomain.Options{PauseTimeout: time.Minute})
	for i, want := range []struct{ id, session string }{{"interception-job-1.0", "AB12"}, {"interception-job-2.0", ""}} {
		got, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		var e struct {
			Method    string       `json:"method"`
			Params    jsonv2.Value `json:"params"`
			SessionID string       `json:"sessionId"`
		}
		if err := jsonv2.Unmarshal(got, &e); err != nil {
			t.Fatalf("message %d is not JSON: %v: %.300s", i, err, got)
		}
		if e.Method != "Fetch.requestPaused" || e.SessionID != want.session || !strings.Contains(string(e.Params), `"requestId":"`+want.id+`"`) {
			t.Fatalf("message %d: got %.300s, want a requestPaused for %s on session %q", i, got, want.id, want.session)
		}
		if len(got) > 500 {
			t.Errorf("message %d kept %d bytes of an oversize event", i, len(got))
		}
		j.Paused(e.SessionID, e.Params) // the judge never started: only its read-loop fail answers
	}
	if got, err := c.ReadMessage(); err != nil || string(got) != `{"id":9,"result":{}}` {
		t.Fatalf("after the oversize events: %.300s, %v", got, err)
	}
	if got := strings.Join(kinds, ","); got != "requestPaused,event,requestPaused" {
		t.Errorf("counted %q, want requestPaused,event,requestPaused", got)
	}
	want := []string{
		`AB12 Fetch.failRequest {"requestId":"interception-job-1.0","errorReason":"BlockedByClient"}`,
		` Fetch.failRequest {"requestId":"interception-job-2.0","errorReason":"BlockedByClient"}`,
	}
	send.mu.Lock()
	defer send.mu.Unlock()
	if strings.Join(send.sent, "\n") != strings.Join(want, "\n") {
		t.Errorf("judge sent:\n%s\nwant:\n%s", strings.Join(send.sent, "\n"), strings.Join(want, "\n"))
	}
}
