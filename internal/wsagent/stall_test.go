package wsagent

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// wsPair returns the guard's side of a real WebSocket over loopback TCP and
// the agent's side as the raw upgraded stream (so that a benchmark's reader
// allocates nothing per message, and a test can simply stop reading).
func wsPair(tb testing.TB) (*websocket.Conn, io.ReadWriteCloser) {
	return upgradePair(tb, func(w http.ResponseWriter, r *http.Request) (*websocket.Conn, error) {
		return websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	})
}

// upgradePair serves one WebSocket upgrade with accept and returns what it
// made and the agent's side as the raw upgraded stream.
func upgradePair[C interface{ CloseNow() error }](tb testing.TB, accept func(w http.ResponseWriter, r *http.Request) (C, error)) (C, io.ReadWriteCloser) {
	tb.Helper()
	accepted := make(chan C, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := accept(w, r)
		if err != nil {
			return
		}
		accepted <- c
	}))
	tb.Cleanup(srv.Close)
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", base64.StdEncoding.EncodeToString(key))
	tr := &http.Transport{}
	tb.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Do(req) // no client Timeout: it would wrap the upgraded body
	if err != nil {
		tb.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		tb.Fatalf("upgrade: %s", resp.Status)
	}
	raw, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		tb.Fatal("upgrade: the response body is not the connection")
	}
	tb.Cleanup(func() { _ = raw.Close() })
	select {
	case c := <-accepted:
		tb.Cleanup(func() { _ = c.CloseNow() })
		return c, raw
	case <-time.After(10 * time.Second):
		tb.Fatal("no WebSocket accepted within 10s")
		var zero C
		return zero, nil
	}
}

// TestStallConnCutsOffSlowReader: an agent that does not read is cut off
// once one write outlasts the bound, and counted once.
func TestStallConnCutsOffSlowReader(t *testing.T) {
	c, _ := wsPair(t) // the agent never reads
	var stalls atomic.Int32
	s := newStallConn(&wsAgentConn{c: c, writeTimeout: 200 * time.Millisecond, onStall: func() { stalls.Add(1) }})
	msg := []byte(strings.Repeat("x", 1<<20))
	start := time.Now()
	var err error
	for i := 0; i < 256 && err == nil; i++ { // loopback buffers fill within a few MB
		err = s.Write(t.Context(), msg)
	}
	if !errors.Is(err, errAgentStalled) {
		t.Fatalf("writes to an agent that does not read: %v, want %v", err, errAgentStalled)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cut off after %v, bound 200ms", d)
	}
	if n := stalls.Load(); n != 1 {
		t.Errorf("onStall called %d times, want 1", n)
	}
	if err := s.Write(t.Context(), []byte("{}")); err == nil {
		t.Error("a write after the cut-off succeeded")
	}
}

// TestStallConnWriterContextEnds: the relay's writer context ending aborts a
// blocked write within closeGrace (not after the bound) and is not a stall;
// one that ended before the write stops it from starting.
func TestStallConnWriterContextEnds(t *testing.T) {
	c, _ := wsPair(t)
	var stalls atomic.Int32
	s := newStallConn(&wsAgentConn{c: c, writeTimeout: time.Minute, onStall: func() { stalls.Add(1) }})
	ctx, cancel := context.WithCancel(t.Context())
	msg := []byte(strings.Repeat("x", 1<<20))
	done := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < 256 && err == nil; i++ {
			err = s.Write(ctx, msg)
		}
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // the writes block on full buffers
	cancel()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, errAgentStalled) {
			t.Errorf("write after the writer's context ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a blocked write outlived its writer's context by 10s")
	}
	if n := stalls.Load(); n != 0 {
		t.Errorf("onStall called %d times for a context end", n)
	}

	c2, _ := wsPair(t)
	s2 := newStallConn(&wsAgentConn{c: c2, writeTimeout: time.Minute})
	if err := s2.Write(ctx, []byte("{}")); !errors.Is(err, context.Canceled) {
		t.Errorf("write with an ended context: %v, want %v", err, context.Canceled)
	}
}

// TestStallConnCloseKeepsReason: a writer context that ends between writes
// does not drop the socket; the close that follows carries its reason.
func TestStallConnCloseKeepsReason(t *testing.T) {
	c, raw := wsPair(t)
	s := newStallConn(&wsAgentConn{c: c, writeTimeout: time.Minute})
	ctx, cancel := context.WithCancel(t.Context())
	if err := s.Write(ctx, []byte(`{"id":1}`)); err != nil {
		t.Fatal(err)
	}
	cancel()
	time.Sleep(200 * time.Millisecond) // room for a watcher that wrongly drops the socket to act
	closed := make(chan error, 1)
	go func() { closed <- s.Close(int(websocket.StatusPolicyViolation), "cdpguard: bye") }()
	buf := make([]byte, 256)
	var got []byte
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(string(got), "cdpguard: bye") && time.Now().Before(deadline) {
		n, err := raw.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
	}
	if !strings.Contains(string(got), "cdpguard: bye") {
		t.Errorf("the agent did not get the close reason; read %q", got)
	}
	_ = raw.Close()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Error("Close did not return within 10s")
	}
}

// TestStallConnCutOffDeliversReason: the relay cuts off an agent while a
// write to it is blocked (a byte bound); the agent starts reading within
// closeGrace, so the write finishes and the close frame with the reason
// reaches it.
func TestStallConnCutOffDeliversReason(t *testing.T) {
	c, raw := wsPair(t)
	s := newStallConn(&wsAgentConn{c: c, writeTimeout: time.Minute})
	ctx, cancel := context.WithCancel(t.Context())
	msg := []byte(strings.Repeat("x", 1<<20))
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 256; i++ {
			w := make(chan error, 1)
			go func() { w <- s.Write(ctx, msg) }()
			select {
			case err := <-w:
				if err != nil {
					done <- err
					return
				}
				continue
			case <-time.After(300 * time.Millisecond): // blocked on full buffers
			}
			cancel() // the relay cuts the agent off
			err := <-w
			if err == nil { // the agent does not answer the close frame: an error, and no matter
				_ = s.Close(int(websocket.StatusPolicyViolation), "cdpguard: cut off")
			}
			done <- err
			return
		}
		done <- errors.New("writes never blocked")
	}()
	buf := make([]byte, 64<<10)
	var tail []byte
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(string(tail), "cdpguard: cut off") && time.Now().Before(deadline) {
		if ctx.Err() == nil { // reading only once the cut-off happened
			time.Sleep(10 * time.Millisecond)
			continue
		}
		n, err := raw.Read(buf)
		tail = append(tail[max(0, len(tail)-64):], buf[:n]...)
		if err != nil {
			break
		}
	}
	if !strings.Contains(string(tail), "cdpguard: cut off") {
		t.Errorf("the agent, reading within the grace, did not get the close reason; last bytes %q", tail)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the write in progress, its agent reading within the grace: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the writer did not end")
	}
}

// BenchmarkAgentWrite measures the per-message cost of an agent write over
// a real loopback WebSocket whose reader discards (run with -benchmem; the
// context-per-write path it replaced cost 11 allocs/op, see
// docs/decisions/2026-12-01-loose-ends.md).
func BenchmarkAgentWrite(b *testing.B) {
	msg := []byte(`{"method":"Runtime.consoleAPICalled","params":{"type":"log","args":[{"type":"string","value":"hello"}]},"sessionId":"0123456789ABCDEF0123456789ABCDEF"}`)
	c, raw := wsPair(b)
	go func() { _, _ = io.Copy(io.Discard, raw) }()
	w := newStallConn(&wsAgentConn{c: c, writeTimeout: 10 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := w.Write(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
}
