package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/procstat"
)

// The hostile clients of timedHostile, scaled down from issue 32's
// reproductions (the same code paths as the defaults): agent messages
// stalled short of their end (item 4), /mcp bodies stalled short (item 5),
// an initialize loop (item 6), session headers of 200 kB (item 7) and
// distinct users (item 8), all against one `cdpguard serve` at small caps.
const (
	hostileTotal      = 40 << 20 // --agent-total-bytes
	hostileUserRecv   = 16 << 20 // --user-receive-bytes
	hostileMessage    = 7 << 20  // each stalled agent message
	hostileSameUser   = 6        // stalled messages of one user (its share holds two)
	hostileOtherUsers = 6        // one stalled message each
	hostileMaxUsers   = 12       // --max-users: the victim, the stalling users, and a flood of others
	hostileSamples    = 300      // the victim's evaluates in each phase
)

// timedHostile: issue 32's hostile clients at once, held, against one
// daemon, and a victim user beside them. The victim's Runtime.evaluate
// round trips are sampled quiet before, while every attack holds what it
// could take (messages and bodies stalled, sessions and users at their
// caps), and quiet again once the attackers left; the held phase's p99
// (the best of three windows) must stay within 1.5x the slower quiet p99
// (plus 2 ms: one scheduling delay on a shared 2-core machine), and the
// victim's MCP session answers beside the stalled bodies. Every attack is
// refused at its cap naming it, and the daemon's RSS stays under the
// ceiling of TestReceiveBounds (the other attacks' bytes are small at
// these caps).
// The attacks' own traffic is over before the held phase: it measures
// what the held attacks cost others, not the test's CPU sending them.
func timedHostile(t *testing.T) {
	chrome := needBrowser(t)
	if directMode() {
		t.Skip("the caps are the guard's")
	}
	args := append(serveArgs(chrome),
		"--agent-total-bytes", strconv.Itoa(hostileTotal), "--user-receive-bytes", strconv.Itoa(hostileUserRecv),
		"--agent-receive-timeout", "60s", "--mcp-body-timeout", "60s",
		"--mcp-max-sessions-per-user", "3", "--mcp-max-sessions", "6",
		"--mcp-max-bodies-per-user", "2", "--mcp-max-bodies", "4",
		"--max-users", strconv.Itoa(hostileMaxUsers), "--new-users-per-second", "-1")
	srv := startServed(t, exec.Command(buildCdpguard(t, t.TempDir()), args...))
	base := srv.listenURL(t)
	ws := browserWS(t, base)
	defer func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", srv.out)
		}
	}()

	victim := cdptest.DialUser(t, ws, "hostile-victim", cdptest.Options{})
	vs := rawPage(t, victim)
	id := 1
	sample := func(phase string) time.Duration {
		t.Helper()
		ds := make([]time.Duration, 0, hostileSamples)
		for range hostileSamples {
			id++
			d, err := evalWithin(t, victim, id, vs, 15*time.Second)
			if err != nil {
				t.Fatalf("%s: the victim's evaluate failed: %v", phase, err)
			}
			ds = append(ds, d)
		}
		return p99(ds)
	}
	keeper := mcpConnect(t, base, "hostile-victim") // the victim's MCP session
	call(t, keeper, "browser_tabs", map[string]any{"action": "list"}, false)
	sample("warm-up")
	before := sample("quiet, before")
	rss0 := procRSS(t, srv.cmd.Process.Pid, 0)
	peak := samplePeakRSS(t, srv.cmd.Process.Pid)

	// Item 4: messages stalled 1 KiB short; past the user's share or the
	// budget a connection is closed, the rest are held.
	var holders []*heldMessage
	for range hostileSameUser {
		holders = append(holders, holdMessage(t, ws, "hostile-frames"))
	}
	for i := range hostileOtherUsers {
		holders = append(holders, holdMessage(t, ws, fmt.Sprintf("hostile-frames-%d", i)))
	}
	cut := 0
	for _, h := range holders {
		<-h.sent
		select {
		case <-h.closed:
			cut++
		default:
		}
	}
	// Item 6: an initialize loop, until the total cap refuses it.
	for i := 0; ; i++ {
		code, body := initializeRaw(t, base, fmt.Sprintf("hostile-mcp-%d", i/3))
		if code == http.StatusServiceUnavailable && strings.Contains(body, "(sessions)") {
			break
		}
		if code != http.StatusOK || i > 6 {
			t.Fatalf("initialize %d of the loop: %d %.200s", i, code, body)
		}
	}
	// Item 5: /mcp bodies stalled 100 bytes short, past the caps refused.
	r0 := metricValue(t, base, "cdpguard_receiving_bytes")
	stallBody(t, base, "hostile-body")
	stallBody(t, base, "hostile-body")
	waitReceiving(t, base, r0+2*stalledReserve)
	slowBodyRefused(t, base, "hostile-body", http.StatusTooManyRequests, "bodies_per_user")
	stallBody(t, base, "hostile-body-2")
	stallBody(t, base, "hostile-body-2")
	waitReceiving(t, base, r0+4*stalledReserve)
	slowBodyRefused(t, base, "hostile-body-3", http.StatusServiceUnavailable, "bodies")
	// Item 7: 200 kB session headers, refused before they key a user; and
	// 256 kB headers stalled short of their end on 50 connections at once,
	// each refused once the endpoint read 64 KiB of it (Go's default was 1
	// MiB, held until the 10 s header deadline).
	long := strings.Repeat("h", 200<<10)
	for range 20 {
		if code := userStatus(t, base+"/json/version", long); code != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("a 200 kB session header: %d, want 431", code)
		}
	}
	codes := make([]int, 50)
	var hw sync.WaitGroup
	for i := range codes {
		hw.Go(func() { codes[i] = stalledHeader(t, base, 256<<10) })
	}
	hw.Wait()
	for i, code := range codes {
		if code != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("stalled 256 kB header %d: %d, want 431 before its end", i, code)
		}
	}
	// Item 8: distinct users, one connection each, until --max-users.
	var flood []*websocket.Conn
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		c, resp, err := websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: http.Header{cdpguard.DefaultSessionHeader: {fmt.Sprintf("hostile-user-%d", i)}}})
		cancel()
		if err == nil {
			t.Cleanup(func() { c.CloseNow() })
			flood = append(flood, c)
			if i > hostileMaxUsers {
				t.Fatalf("%d distinct users admitted, past --max-users=%d", i+1, hostileMaxUsers)
			}
			continue
		}
		if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("distinct user %d: %v, want 503 at --max-users", i, err)
		}
		resp.Body.Close()
		break
	}
	if got := metricValue(t, base, "cdpguard_users"); got != hostileMaxUsers {
		t.Errorf("cdpguard_users = %v with the flood held, want %d", got, hostileMaxUsers)
	}
	held := metricValue(t, base, "cdpguard_receiving_bytes")

	// Three windows while held, the best of them taken: a slowdown the
	// held attacks cause lasts through all three, outside load on a
	// shared machine comes and goes (one window of a loaded run measured
	// 19.8 ms against quiet 7.6 and 4.7 ms).
	var windows []time.Duration
	for range 3 {
		windows = append(windows, sample("attacks held"))
	}
	during := slices.Min(windows)
	// The victim's open MCP session is read beside the stalled bodies.
	call(t, keeper, "browser_tabs", map[string]any{"action": "list"}, false)

	for _, h := range holders {
		h.c.CloseNow()
	}
	for _, c := range flood {
		c.CloseNow()
	}
	// The stalled messages' bytes are freed; the stalled bodies' few kB
	// stay until their deadline.
	for end := time.Now().Add(15 * time.Second); metricValue(t, base, "cdpguard_receiving_bytes") >= 1<<20; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the stalled messages' bytes not freed within 15 s of their connections closing")
		}
	}
	after := sample("quiet, after")
	grew := peak() - rss0

	limit := 3*max(before, after)/2 + 2*time.Millisecond
	t.Logf("victim p99 over %d evaluates: %v quiet before, %v with the attacks held (windows %v; %d of %d stalled messages cut, %d MiB held being received, %d users, %d distinct users admitted), %v quiet after; bound %v; daemon RSS peak growth %d MiB",
		hostileSamples, before, during, windows, cut, len(holders), int(held)>>20, hostileMaxUsers, len(flood), after, limit, grew>>20)
	if during > limit {
		t.Errorf("the victim's p99 with the attacks held is %v, over %v (1.5x the slower quiet p99 of %v and %v, plus 2 ms)", during, limit, before, after)
	}
	if cut == 0 || cut == len(holders) {
		t.Errorf("%d of %d stalled messages cut off; want some cut at the bounds and some held", cut, len(holders))
	}
	if ceiling := int64(2*hostileTotal + 60<<20); grew > ceiling {
		t.Errorf("the daemon's RSS grew by %d MiB, over the ceiling of %d MiB", grew>>20, ceiling>>20)
	}
}

// heldMessage is an agent connection holding a message stalled 1 KiB
// short of hostileMessage bytes: sent is closed once the bytes are
// written (or the guard cut it off while they were), closed once the
// guard closed the connection.
type heldMessage struct {
	c            *websocket.Conn
	sent, closed chan struct{}
}

// holdMessage opens an agent connection as user and starts its stalled
// message; the connection is closed at the test's end.
func holdMessage(t *testing.T, ws, user string) *heldMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: http.Header{cdpguard.DefaultSessionHeader: {user}}})
	if err != nil {
		t.Fatalf("dial as %s: %v", user, err)
	}
	t.Cleanup(func() { c.CloseNow() })
	h := &heldMessage{c: c, sent: make(chan struct{}), closed: make(chan struct{})}
	go func() { // ends when the connection does: the guard sends nothing unasked
		defer close(h.closed)
		_, _, _ = c.Read(context.Background())
	}()
	go func() { // ends when the message is written or the connection cut
		defer close(h.sent)
		w, err := c.Writer(context.Background(), websocket.MessageText)
		if err != nil {
			return
		}
		chunk := []byte(strings.Repeat(" ", 256<<10))
		for sent := 0; sent < hostileMessage-1<<10; sent += len(chunk) {
			if _, err := w.Write(chunk[:min(len(chunk), hostileMessage-1<<10-sent)]); err != nil {
				return
			}
		}
	}()
	return h
}

// stalledHeader sends a request to base whose one header is size bytes
// and never ends, and returns the status of the answer (0 when none came
// within 15 s: the endpoint still waits for the header's end).
func stalledHeader(t *testing.T, base string, size int) int {
	u, err := url.Parse(base)
	if err != nil {
		t.Error(err)
		return 0
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Error(err)
		return 0
	}
	defer c.Close()
	go func() { // ends when the whole header is written or the connection closed
		_, _ = fmt.Fprintf(c, "GET /json/version HTTP/1.1\r\nHost: %s\r\nX-Pad: %s", u.Host, strings.Repeat("p", size))
	}()
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second)) // a hang guard
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// p99 is the 99th percentile of ds.
func p99(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)*99+99)/100-1]
}

// samplePeakRSS samples pid's RSS every 20 ms until the test ends; the
// function it returns reads the peak so far.
func samplePeakRSS(t *testing.T, pid int) func() int64 {
	t.Helper()
	var peak atomic.Int64
	peak.Store(procRSS(t, pid, 0))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { // ends at the test's cleanup
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if n, err := procstat.RSS(pid); err == nil && n > peak.Load() {
					peak.Store(n)
				}
			}
		}
	}()
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(stop); <-done }) })
	return peak.Load
}

// procRSS is pid's RSS now (or, when it cannot be read, fallback).
func procRSS(t *testing.T, pid int, fallback int64) int64 {
	t.Helper()
	n, err := procstat.RSS(pid)
	if err != nil {
		t.Logf("RSS of %d: %v", pid, err)
		return fallback
	}
	return n
}
