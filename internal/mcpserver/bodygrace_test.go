package mcpserver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// peakBudget is a Budget without bounds that records the most bytes each
// user held at once.
type peakBudget struct {
	mu         sync.Mutex
	held, peak map[string]int64
}

func (b *peakBudget) Reserve(user, _ string, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held[user] += n
	b.peak[user] = max(b.peak[user], b.held[user])
	return nil
}

func (b *peakBudget) Release(user string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held[user] -= n
}

func (b *peakBudget) peakOf(user string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak[user]
}

// TestGraceBodyBytes: a body read without a slot (the caps are full) holds
// at most graceBytes of the budget: one that says it is larger needs a
// slot and is refused at once naming the cap. Before, it reserved its
// whole Content-Length for the grace, so a client opening bodies of 4 MiB
// at the caps, each refused after 1 s and opened again, held the byte
// budget every agent receives from (its bodies bounded by no cap), and
// others' messages were refused for it.
func TestGraceBodyBytes(t *testing.T) {
	budget := &peakBudget{held: map[string]int64{}, peak: map[string]int64{}}
	url, refused, e := limitedEndpointE(t, Limits{MaxBodiesPerUser: 1, MaxBodies: 1, BodyTimeout: time.Minute}, budget)
	stalledConn(t, url, "a")
	waitReading(t, e, url, "a")

	host := strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://")
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nX-User: b\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n{", host, 1<<20)
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a hang guard
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("b's large body at the caps: no answer: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(got), CapBodies) {
		t.Errorf("b's large body at the caps: %d %s", resp.StatusCode, got)
	}
	if p := budget.peakOf("b"); p > graceBytes {
		t.Errorf("b's body without a slot held %d bytes of the budget, want at most %d", p, graceBytes)
	}
	if n := refused(CapBodies); n != 1 {
		t.Errorf("%d refusals of %s, want 1", n, CapBodies)
	}
	// A small body at the caps is still read (a new user's initialize).
	initialize(t, url, "c")
}
