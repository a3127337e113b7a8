package wsagent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/bounds"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// acceptedConn is an accepted agent connection the test cleans up.
type acceptedConn struct{ *Conn }

func (a acceptedConn) CloseNow() error { return a.c.CloseNow() }

// agentPair accepts an agent's WebSocket with o and returns it and the
// agent's side as the raw stream.
func agentPair(t *testing.T, o Options) (*Conn, io.ReadWriteCloser) {
	a, raw := upgradePair(t, func(w http.ResponseWriter, r *http.Request) (acceptedConn, error) {
		c, err := Accept(w, r, o)
		return acceptedConn{c}, err
	})
	return a.Conn, raw
}

// textHeader is a client's masked text frame header of n bytes; its mask
// key is zero, so the payload goes as it is.
func textHeader(n int) []byte {
	h := []byte{0x81, 0x80 | 127}
	h = binary.BigEndian.AppendUint64(h, uint64(n))
	return append(h, 0, 0, 0, 0)
}

// cuts counts OnCut by bound.
type cuts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *cuts) on(bound string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[bound]++
}

func (c *cuts) get(bound string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[bound]
}

// readBounded reads one message on another goroutine, failing the test if
// it does not end within 20 s (a hang guard).
func readBounded(t *testing.T, c *Conn) ([]byte, error) {
	t.Helper()
	type res struct {
		b   []byte
		err error
	}
	done := make(chan res, 1)
	go func() { b, err := c.Read(t.Context()); done <- res{b, err} }()
	select {
	case r := <-done:
		return r.b, r.err
	case <-time.After(20 * time.Second):
		t.Fatal("the read did not end within 20 s")
		return nil, nil
	}
}

// closeReason reads the agent's side until the guard's close frame and
// returns the bytes read (the frame's reason among them), bounded at 10 s.
func closeReason(t *testing.T, raw io.Reader, want string) {
	t.Helper()
	got := make(chan bool, 1)
	go func() {
		var seen []byte
		buf := make([]byte, 4096)
		for {
			n, err := raw.Read(buf)
			seen = append(seen, buf[:n]...)
			if bytes.Contains(seen, []byte(want)) {
				got <- true
				return
			}
			if err != nil {
				got <- false
				return
			}
		}
	}()
	select {
	case ok := <-got:
		if !ok {
			t.Errorf("the agent's side ended without a close reason containing %q", want)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("no close reason containing %q within 10 s", want)
	}
}

// closeError asserts err is a relay.CloseError whose reason names bound.
func closeError(t *testing.T, err error, bound string) {
	t.Helper()
	var ce *relay.CloseError
	if !errors.As(err, &ce) || ce.Code != relay.StatusPolicy || !strings.Contains(ce.Reason, bound) {
		t.Fatalf("read: %v, want a policy close naming %s", err, bound)
	}
}

// TestReceiveStalledMessageCutOff: a message that stalls part way is cut
// off by its receive bound, the agent gets the reason, the cut is counted
// and the bytes it reserved go back to the budget.
func TestReceiveStalledMessageCutOff(t *testing.T) {
	budget := bounds.NewBudget(-1, -1, nil)
	var cut cuts
	c, raw := agentPair(t, Options{User: "u", Budget: budget, ReceiveTimeout: 200 * time.Millisecond, OnCut: cut.on})
	if _, err := raw.Write(append(textHeader(3<<20), make([]byte, 200<<10)...)); err != nil {
		t.Fatal(err)
	}
	_, err := readBounded(t, c)
	closeError(t, err, bounds.BoundReceiveTime)
	closeReason(t, raw, "not received in time")
	if n := cut.get(bounds.BoundReceiveTime); n != 1 {
		t.Errorf("receive_timeout counted %d times, want 1", n)
	}
	_ = c.Close(relay.StatusPolicy, "")
	if total, _ := budget.Receiving(); total != 0 {
		t.Errorf("%d bytes still reserved after the cut-off", total)
	}
}

// TestReceiveOverUserShare: a message that would take its user past the
// share is cut off naming it, and gives back what it reserved.
func TestReceiveOverUserShare(t *testing.T) {
	budget := bounds.NewBudget(-1, 1<<20, nil)
	var cut cuts
	c, raw := agentPair(t, Options{User: "u", Budget: budget, OnCut: cut.on})
	go func() { // ends when the guard closes the connection (the test's cleanup at the latest)
		_, _ = raw.Write(append(textHeader(3<<20), make([]byte, 3<<20)...))
	}()
	_, err := readBounded(t, c)
	closeError(t, err, bounds.BoundUserReceive)
	if n := cut.get(bounds.BoundUserReceive); n != 1 {
		t.Errorf("receive_user_bytes counted %d times, want 1", n)
	}
	if total, _ := budget.Receiving(); total != 0 {
		t.Errorf("%d bytes still reserved after the refusal", total)
	}
	_ = c.Close(relay.StatusPolicy, err.Error())
	closeReason(t, raw, bounds.BoundUserReceive)
}

// TestReceiveWholeMessages: small, middling and large messages arrive
// whole; only the large one takes bytes from the budget, until the next
// read gives them back.
func TestReceiveWholeMessages(t *testing.T) {
	budget := bounds.NewBudget(-1, -1, nil)
	c, raw := agentPair(t, Options{User: "u", Budget: budget})
	big := bytes.Repeat([]byte("y"), 3<<20)
	mid := bytes.Repeat([]byte("m"), 60<<10) // past the scratch buffer, within the free size
	go func() {
		_, _ = raw.Write(append(textHeader(5), "small"...))
		_, _ = raw.Write(append(textHeader(len(mid)), mid...))
		_, _ = raw.Write(append(textHeader(len(big)), big...))
		_, _ = raw.Write(append(textHeader(2), "ok"...))
	}()
	for i, want := range [][]byte{[]byte("small"), mid, big, []byte("ok")} {
		b, err := readBounded(t, c)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, want) {
			t.Fatalf("message %d: %d bytes, want %d", i, len(b), len(want))
		}
		total, _ := budget.Receiving()
		if (i == 2) != (total > 0) {
			t.Errorf("after message %d, %d bytes reserved", i, total)
		}
	}
}
