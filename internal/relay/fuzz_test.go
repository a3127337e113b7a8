package relay

import (
	"fmt"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

// FuzzAgentMessage sends one arbitrary agent message through a real Mux and
// Agent over the fakes. The relay must not panic, must answer the message
// exactly once (with the message's id when it has a readable one), and must
// then still answer a good command. One mux and two agents serve a whole
// fuzz worker, so an input that breaks the connection fails every later one.
// markerBase keeps marker ids clear of the ids fuzz inputs leave in flight.
const markerBase = 1 << 50

func FuzzAgentMessage(f *testing.F) {
	h := newHarness(f)
	x := h.startAgent(f, AgentOptions{Name: "fuzz", Rate: -1})
	h.startAgent(f, AgentOptions{Name: "other"}) // owns BS2: a foreign session to guess
	nonce := time.Now().UnixNano()
	var n int64
	f.Fuzz(func(t *testing.T, msg []byte) {
		n++
		marker := fmt.Sprintf("Fuzz.marker%d_%d", nonce, n)
		x.send(t, string(msg))
		x.send(t, fmt.Sprintf(`{"id":%d,"method":%q}`, markerBase+n, marker))
		var replies [][]byte
		for {
			m := x.recv(t)
			e, err := cdpmsg.Decode(m)
			if err != nil {
				t.Fatalf("agent received undecodable %q: %v", m, err)
			}
			if e.HasID && e.ID == markerBase+n && string(e.Result) == fmt.Sprintf(`{"echo":%q}`, marker) {
				break
			}
			if e.IsEvent() {
				t.Fatalf("unexpected event %s", m)
			}
			replies = append(replies, m)
			if len(replies) > 1 {
				t.Fatalf("input %q got %d replies: %q", msg, len(replies), replies)
			}
		}
		if len(replies) != 1 {
			t.Fatalf("input %q got no reply", msg)
		}
		in, err := cdpmsg.Decode(msg)
		if err != nil {
			return
		}
		out, _ := cdpmsg.Decode(replies[0])
		if in.HasID && (!out.HasID || out.ID != in.ID) {
			t.Fatalf("input %q: reply %q has the wrong id", msg, replies[0])
		}
	})
}

// BenchmarkRelayRoundTrip measures agent command → fake browser echo →
// agent reply. Allocations include the fakes' (decode and echo in the
// browser, channel hand-offs in the pipe).
func BenchmarkRelayRoundTrip(b *testing.B) {
	h := newHarness(b)
	x := h.startAgent(b, AgentOptions{Name: "bench", Rate: -1})
	msg := []byte(`{"id":7,"method":"Runtime.evaluate","params":{"expression":"document.title","returnByValue":true}}`)
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		timeout.Reset(wait)
		select {
		case x.in <- msg:
		case <-timeout.C:
			b.Fatal("send blocked")
		}
		select {
		case <-x.out:
		case <-timeout.C:
			b.Fatal("no reply")
		}
	}
}
