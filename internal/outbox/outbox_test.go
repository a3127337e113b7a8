package outbox

import (
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/relay"
)

// TestQueueOrder: work runs in order on Run's goroutine, Add never blocks
// (even with nobody running the queue), and Flush returns once the work
// before it ran, or once done is closed.
func TestQueueOrder(t *testing.T) {
	q := New()
	var got []int
	for i := range 100 {
		q.Add(func() { got = append(got, i) }) // nobody runs the queue yet: must not block
	}
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() { defer close(ended); q.Run(done) }()
	flushed := make(chan struct{})
	go func() { defer close(flushed); q.Flush(done) }()
	select {
	case <-flushed:
	case <-time.After(5 * time.Second):
		t.Fatal("Flush did not return within 5s")
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("ran out of order: %v", got)
		}
	}
	if len(got) != 100 {
		t.Fatalf("ran %d of 100", len(got))
	}
	close(done)
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not end within 5s of done")
	}
	q.Flush(done) // Run has stopped: done ends the wait
}

type fakeBrowser struct {
	mu   sync.Mutex
	sent []string
	err  error
}

func (f *fakeBrowser) Send(_, method string, _ any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, method)
	return f.err
}

// TestSender: Send only queues (the browser sees nothing until the queue
// runs) and reports no error, even when the browser's send fails.
func TestSender(t *testing.T) {
	q := New()
	b := &fakeBrowser{err: relay.ErrBrowserLost}
	s := q.Sender(b, slog.New(slog.DiscardHandler))
	if err := s.Send("S", "Page.handleJavaScriptDialog", nil); err != nil {
		t.Fatal(err)
	}
	b.err = errors.New("write failed")
	_ = s.Send("S", "Target.closeTarget", nil)
	if len(b.sent) != 0 {
		t.Fatal("Send sent before the queue ran")
	}
	done := make(chan struct{})
	defer close(done)
	go q.Run(done)
	q.Flush(done)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.sent) != 2 || b.sent[0] != "Page.handleJavaScriptDialog" || b.sent[1] != "Target.closeTarget" {
		t.Errorf("sent %v", b.sent)
	}
}
