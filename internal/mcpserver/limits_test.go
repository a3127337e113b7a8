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
	url, refused, _ := limitedEndpointE(t, l, budget)
	return url, refused
}

// limitedEndpointE is limitedEndpoint that also returns the Endpoint, for
// tests that watch its state.
func limitedEndpointE(t *testing.T, l Limits, budget Budget) (string, func(string) int, *Endpoint) {
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
	return srv.URL + "/mcp", func(c string) int { mu.Lock(); defer mu.Unlock(); return refused[c] }, e
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

// TestBodyCaps: slow bodies being read at once past the per-user cap get
// a 429 naming it, past the total a 503, and the places are free again
// once those bodies end; a body that arrives at once is read without a
// place, so stalled bodies at the caps hold off no one's requests (issue
// 32: other users never notice). The deadline has a test of its own
// (TestBodyDeadline): with a deadline short enough to wait for here, a
// loaded machine could let a stalled body's deadline pass before the
// probes saw it holding its place.
func TestBodyCaps(t *testing.T) {
	url, refused, e := limitedEndpointE(t, Limits{MaxBodiesPerUser: 1, MaxBodies: 2, BodyTimeout: time.Minute}, nil)
	a := stalledConn(t, url, "a")
	waitReading(t, e, url, "a")
	code, body := stalledAnswer(t, url, "a")
	if code != http.StatusTooManyRequests || !strings.Contains(body, CapBodiesPerUser) {
		t.Fatalf("a's second slow body: %d %s", code, body)
	}
	b := stalledConn(t, url, "b")
	waitReading(t, e, url, "b")
	code, body = stalledAnswer(t, url, "c")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, CapBodies) {
		t.Fatalf("c's slow body past the total: %d %s", code, body)
	}
	// Bodies that arrive at once are read beside the stalled ones: a new
	// user's initialize, and the stalled user's own open session's.
	initialize(t, url, "c")
	initialize(t, url, "a")
	// Per user: a's second body and each waitReading's probe.
	if refused(CapBodiesPerUser) != 3 || refused(CapBodies) != 1 {
		t.Errorf("refusals: %d per user, %d in all; want 3, 1", refused(CapBodiesPerUser), refused(CapBodies))
	}
	_ = a.Close() // the clients give up: their bodies end, and their places are free
	_ = b.Close()
	initializeOnceFree(t, url, "a")
	initializeOnceFree(t, url, "c")
}

// TestBodyDeadline: a stalled body is refused at its deadline naming it
// (408), and its place is free again.
func TestBodyDeadline(t *testing.T) {
	url, refused := limitedEndpoint(t, Limits{MaxBodiesPerUser: 1, BodyTimeout: 500 * time.Millisecond}, nil)
	c := stalledConn(t, url, "a")
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a hang guard
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("the stalled body: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(got), CapBodyTimeout) {
		t.Errorf("the stalled body: %d %s", resp.StatusCode, got)
	}
	if n := refused(CapBodyTimeout); n != 1 {
		t.Errorf("%d deadline refusals, want 1", n)
	}
	initializeOnceFree(t, url, "a")
}

// stalledConn starts a POST as user whose body stops 100 bytes short and
// returns the connection, on which the answer arrives.
func stalledConn(t *testing.T, url, user string) net.Conn {
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
	return c
}

// initializeOnceFree initializes a session of user once the body caps
// let it: a body that ended frees its place when its handler returns,
// just after the client saw it end (bounded at 10 s).
func initializeOnceFree(t *testing.T, url, user string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _, body := mcpPost(t, url, user, "", initBody)
		if code == http.StatusOK {
			return
		}
		if (code != http.StatusTooManyRequests && code != http.StatusServiceUnavailable) || time.Now().After(deadline) {
			t.Fatalf("%s's initialize after the bodies ended: %d %s", user, code, body)
		}
		time.Sleep(20 * time.Millisecond) // polls for the ended body's handler to return
	}
}

// waitReading waits until user's stalled body holds its slot (the
// endpoint's own count, bounded at 10 s), then checks that another body of
// user is refused for it. Probing before the count shows it would race:
// a probe read at the moment the stalled body asks for its slot takes the
// slot, and the stalled body gets the 429.
func waitReading(t *testing.T, e *Endpoint, url, user string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.bodies.mu.Lock()
		n := e.bodies.users[user]
		e.bodies.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's stalled body never held a slot", user)
		}
		time.Sleep(20 * time.Millisecond) // polls for the stalled request to reach the endpoint
	}
	if code, body := stalledAnswer(t, url, user); code != http.StatusTooManyRequests {
		t.Fatalf("%s's slow body beside its stalled one: %d %s, want 429", user, code, body)
	}
}

// stalledAnswer posts a stalled body as user (stalledConn) and returns the
// answer's status and body (read bounded at 20 s).
func stalledAnswer(t *testing.T, url, user string) (int, string) {
	t.Helper()
	c := stalledConn(t, url, user)
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a hang guard
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s's stalled body: no answer: %v", user, err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(got)
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
