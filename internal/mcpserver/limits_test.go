package mcpserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/bounds"
)

// limitedEndpoint serves an Endpoint with l over loopback HTTP and returns
// its URL and the refusals counted by cap.
func limitedEndpoint(t *testing.T, l Limits, budget Budget) (string, func(string) int) {
	t.Helper()
	var mu sync.Mutex
	refused := map[string]int{}
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	e := NewEndpoint(EndpointOptions{
		Limits: l, Budget: budget,
		OnRefused: func(c string) { mu.Lock(); refused[c]++; mu.Unlock() },
		Spawn: func(f func(context.Context)) bool {
			go func() { defer close(ended); f(ctx) }()
			return true
		},
		Server: Options{SessionHeader: "X-User"},
	})
	srv := httptest.NewServer(e)
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-ended // Run ends with ctx (a hang here is the test's timeout)
	})
	return srv.URL + "/mcp", func(c string) int { mu.Lock(); defer mu.Unlock(); return refused[c] }
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// mcpPost posts body as user (in session, if not ""), and returns the
// status, the session id answered and the body.
func mcpPost(t *testing.T, url, user, session, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-User", user)
	if session != "" {
		req.Header.Set(sessionIDHeader, session)
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get(sessionIDHeader), string(b)
}

// initialize opens a session for user and returns its id.
func initialize(t *testing.T, url, user string) string {
	t.Helper()
	code, id, body := mcpPost(t, url, user, "", initBody)
	if code != http.StatusOK || id == "" {
		t.Fatalf("initialize as %s: %d %q %s", user, code, id, body)
	}
	if code, _, body := mcpPost(t, url, user, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code/100 != 2 {
		t.Fatalf("initialized as %s: %d %s", user, code, body)
	}
	return id
}

// TestSessionCaps: initializes past the per-user cap get a 429 naming it,
// past the total a 503 naming it, both counted; an open session keeps
// working; an ended session (DELETE) and an idle one free their place.
func TestSessionCaps(t *testing.T) {
	url, refused := limitedEndpoint(t, Limits{MaxSessionsPerUser: 2, MaxSessions: 3, SessionIdle: time.Hour}, nil)
	a1 := initialize(t, url, "a")
	initialize(t, url, "a")
	code, _, body := mcpPost(t, url, "a", "", initBody)
	if code != http.StatusTooManyRequests || !strings.Contains(body, CapSessionsPerUser) {
		t.Fatalf("a's third session: %d %s", code, body)
	}
	initialize(t, url, "b")
	code, _, body = mcpPost(t, url, "c", "", initBody)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, CapSessions) {
		t.Fatalf("c's session past the total: %d %s", code, body)
	}
	if refused(CapSessionsPerUser) != 1 || refused(CapSessions) != 1 {
		t.Errorf("refusals counted: %d per user, %d in all; want 1, 1", refused(CapSessionsPerUser), refused(CapSessions))
	}
	if code, _, body := mcpPost(t, url, "a", a1, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != http.StatusOK || !strings.Contains(body, "browser_navigate") {
		t.Fatalf("a's open session past the cap: %d %s", code, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set(sessionIDHeader, a1)
	req.Header.Set("X-User", "a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	initialize(t, url, "c") // a's ended session made room
}

// TestSessionIdleFreesCap: a session without requests for SessionIdle is
// closed, and its place taken by the user's next initialize.
func TestSessionIdleFreesCap(t *testing.T) {
	url, _ := limitedEndpoint(t, Limits{MaxSessionsPerUser: 1, SessionIdle: 200 * time.Millisecond}, nil)
	old := initialize(t, url, "a")
	deadline := time.Now().Add(10 * time.Second) // a hang guard: the bound is 200 ms
	for {
		code, _, body := mcpPost(t, url, "a", "", initBody)
		if code == http.StatusOK {
			break
		}
		if code != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("a's next session: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond) // polls for the idle session's end
	}
	if code, _, _ := mcpPost(t, url, "a", old, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != http.StatusNotFound {
		t.Errorf("the idle session answered %d, want 404 (closed)", code)
	}
}

// stalledBody starts a POST as user whose body stops 100 bytes short and
// returns the connection, on which the answer arrives.
func stalledBody(t *testing.T, url, user string) *bufio.Reader {
	t.Helper()
	host := strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://")
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	body := strings.Repeat(" ", 1000)
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nX-User: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		host, user, len(body), body[:len(body)-100])
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a hang guard
	return bufio.NewReader(c)
}

// TestBodyCaps: bodies being read at once past the per-user cap get a 429
// naming it, past the total a 503; a stalled body is refused at its
// deadline naming it (408), and its place is free again.
func TestBodyCaps(t *testing.T) {
	url, refused := limitedEndpoint(t, Limits{MaxBodiesPerUser: 1, MaxBodies: 2, BodyTimeout: 2 * time.Second}, nil)
	a := stalledBody(t, url, "a")
	waitReading(t, url, "a")
	code, _, body := mcpPost(t, url, "a", "", initBody)
	if code != http.StatusTooManyRequests || !strings.Contains(body, CapBodiesPerUser) {
		t.Fatalf("a's second body: %d %s", code, body)
	}
	b := stalledBody(t, url, "b")
	waitReading(t, url, "b")
	code, _, body = mcpPost(t, url, "c", "", initBody)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, CapBodies) {
		t.Fatalf("c's body past the total: %d %s", code, body)
	}
	for name, r := range map[string]*bufio.Reader{"a": a, "b": b} {
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("%s's stalled body: %v", name, err)
		}
		got, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(got), CapBodyTimeout) {
			t.Errorf("%s's stalled body: %d %s", name, resp.StatusCode, got)
		}
	}
	// Per user: a's second body and each waitReading's last probe.
	if refused(CapBodiesPerUser) != 3 || refused(CapBodies) != 1 || refused(CapBodyTimeout) != 2 {
		t.Errorf("refusals: %d per user, %d in all, %d timeouts; want 3, 1, 2", refused(CapBodiesPerUser), refused(CapBodies), refused(CapBodyTimeout))
	}
	initialize(t, url, "c")
}

// waitReading waits until user's stalled body holds its slot: another
// body of user is refused (bounded at 10 s).
func waitReading(t *testing.T, url, user string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _, _ := mcpPost(t, url, user, "", `{}`)
		if code == http.StatusTooManyRequests {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's stalled body never held a slot (last answer %d)", user, code)
		}
		time.Sleep(20 * time.Millisecond) // polls for the stalled request to reach the endpoint
	}
}

// TestBodyBudget: a body past the user's share of the byte budget is
// refused naming the bound, and what it reserved is given back.
func TestBodyBudget(t *testing.T) {
	budget := bounds.NewBudget(-1, 1<<10, nil)
	url, refused := limitedEndpoint(t, Limits{}, budget)
	code, _, body := mcpPost(t, url, "a", "", `{"pad":"`+strings.Repeat("x", 4<<10)+`"}`)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, bounds.BoundUserReceive) {
		t.Fatalf("a body over the share: %d %s", code, body)
	}
	if refused(bounds.BoundUserReceive) != 1 {
		t.Errorf("counted %d, want 1", refused(bounds.BoundUserReceive))
	}
	initialize(t, url, "a")
	if total, _ := budget.Receiving(); total != 0 {
		t.Errorf("%d bytes still reserved", total)
	}
}
