package browser

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// pipePair returns a pipeConn and the peer's ends: what the conn writes
// arrives on peerR, what is written to peerW the conn reads.
func pipePair(t *testing.T) (c *pipeConn, peerR, peerW *os.File) {
	t.Helper()
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c = newPipeConn(respR, cmdW)
	t.Cleanup(func() {
		_ = c.Close()
		_ = cmdR.Close()
		_ = respW.Close()
	})
	return c, cmdR, respW
}

func TestPipeConnReadFraming(t *testing.T) {
	c, _, peerW := pipePair(t)
	big := strings.Repeat("b", 3*pipeReadBuffer+17) // spans several buffer fills
	exact := strings.Repeat("e", pipeReadBuffer-1)  // NUL is the buffer's last byte
	msgs := []string{`{"id":1}`, big, "", exact, `{"id":2}`}
	go func() {
		w := bufio.NewWriter(peerW)
		for _, m := range msgs {
			_, _ = w.WriteString(m)
			_ = w.WriteByte(0)
		}
		_ = w.Flush()
		_ = peerW.Close()
	}()
	for i, want := range msgs {
		got, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if string(got) != want {
			t.Fatalf("message %d: got %d bytes, want %d", i, len(got), len(want))
		}
	}
	for range 2 { // the error is sticky
		if _, err := c.ReadMessage(); !errors.Is(err, io.EOF) {
			t.Fatalf("after peer closed: got %v, want io.EOF", err)
		}
	}
}

func TestPipeConnMessagesAreIndependent(t *testing.T) {
	c, _, peerW := pipePair(t)
	go func() { _, _ = peerW.Write([]byte("first\x00second\x00")) }()
	first, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	if string(first) != "first" {
		t.Errorf("first message overwritten by the second: %q", first)
	}
}

func TestPipeConnTruncatedMessage(t *testing.T) {
	c, _, peerW := pipePair(t)
	go func() {
		_, _ = peerW.Write([]byte(`{"id":1`))
		_ = peerW.Close()
	}()
	if _, err := c.ReadMessage(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestPipeConnConcurrentWrites(t *testing.T) {
	c, peerR, _ := pipePair(t)
	const writers, each = 8, 50
	msg := func(w int) []byte { return bytes.Repeat([]byte{'a' + byte(w)}, 1000+w*7919) }
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for range each {
				if err := c.WriteMessage(msg(w)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	br := bufio.NewReader(peerR)
	for i := range writers * each {
		got, err := br.ReadBytes(0)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		got = got[:len(got)-1]
		w := int(got[0] - 'a')
		if w < 0 || w >= writers || !bytes.Equal(got, msg(w)) {
			t.Fatalf("frame %d interleaved (%d bytes)", i, len(got))
		}
	}
	wg.Wait()
}

func TestPipeConnRefusesNUL(t *testing.T) {
	c, _, _ := pipePair(t)
	if err := c.WriteMessage([]byte("{\"id\":1}\x00{\"id\":2,\"method\":\"Browser.close\"}")); !errors.Is(err, ErrInvalidMessage) {
		t.Fatalf("got %v, want ErrInvalidMessage", err)
	}
}

func TestPipeConnCloseUnblocksRead(t *testing.T) {
	c, _, _ := pipePair(t)
	errc := make(chan error, 1)
	go func() {
		_, err := c.ReadMessage()
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("read after Close: got %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadMessage still blocked 5s after Close")
	}
	if err := c.WriteMessage([]byte("{}")); err == nil {
		t.Error("write after Close succeeded")
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestReplayConn(t *testing.T) {
	c, _, peerW := pipePair(t)
	go func() { _, _ = peerW.Write([]byte("live\x00")) }()
	rc := withReplay(c, [][]byte{[]byte("early")})
	for _, want := range []string{"early", "live"} {
		got, err := rc.ReadMessage()
		if err != nil || string(got) != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	}
	if withReplay(c, nil) != Conn(c) {
		t.Error("withReplay wrapped without pending messages")
	}
}
