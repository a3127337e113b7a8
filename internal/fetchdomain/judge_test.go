package fetchdomain

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
	"go.uber.org/goleak"

	"github.com/cdpguard/cdpguard/internal/policy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type sent struct {
	session, method string
	params          map[string]any
}

// fakeSender records answers; block, when set, makes Send wait on it.
type fakeSender struct {
	mu    sync.Mutex
	got   []sent
	block chan struct{}
}

func (f *fakeSender) Send(session, method string, params any) error {
	if f.block != nil {
		<-f.block
	}
	b, ok := params.([]byte) // raw JSON, as the judge sends its hot-path answers
	if !ok {
		b, _ = jsonv2.Marshal(params)
	}
	var m map[string]any
	_ = jsonv2.Unmarshal(b, &m)
	f.mu.Lock()
	f.got = append(f.got, sent{session, method, m})
	f.mu.Unlock()
	return nil
}

func (f *fakeSender) answers() []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sent(nil), f.got...)
}

func (f *fakeSender) waitN(t *testing.T, n int) []sent {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if a := f.answers(); len(a) >= n {
			return a
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("want %d answers, got %v", n, f.answers())
	return nil
}

func paused(id, url, typ, frame string, headers map[string]string) []byte {
	b, _ := jsonv2.Marshal(map[string]any{
		"requestId": id, "frameId": frame, "resourceType": typ,
		"request": map[string]any{"url": url, "method": "GET", "headers": headers},
	})
	return b
}

func newJudge(t *testing.T, s Sender, opts Options) (*Judge, func()) {
	t.Helper()
	p, err := policy.Parse([]string{"allowed.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Policy == nil {
		opts.Policy = p
	}
	j := New(s, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { j.Run(ctx); close(done) }()
	return j, func() { cancel(); <-done }
}

// isPage is the page registry of a test with one live page, target.
func isPage(target string) Pages { return onePage(target) }

// onePage is a registry whose one live page is itself.
type onePage string

func (p onePage) IsPage(frameID string) bool { return frameID == string(p) }

func TestAnswers(t *testing.T) {
	cases := []struct {
		name, url, typ, frame string
		top                   bool
		headers               map[string]string
		opts                  Options
		want                  string
	}{
		{name: "allowed", url: "http://allowed.test/x", typ: "Image", want: "Fetch.continueRequest"},
		{name: "blocked subresource", url: "http://evil.test/x", typ: "Image", want: "Fetch.failRequest"},
		{name: "blocked iframe", url: "http://evil.test/", typ: "Document", frame: "F1", want: "Fetch.failRequest"},
		{name: "blocked top-level", url: "http://evil.test/", typ: "Document", frame: "T1", top: true, want: "Fetch.fulfillRequest"},
		{name: "blocked top-level error mode", url: "http://evil.test/", typ: "Document", frame: "T1", top: true, opts: Options{ErrorForNavigation: true}, want: "Fetch.failRequest"},
		{name: "service worker blocked", url: "http://allowed.test/sw.js", typ: "Other", headers: map[string]string{"Service-Worker": "script"}, opts: Options{BlockServiceWorkers: true}, want: "Fetch.failRequest"},
		{name: "service worker guarded", url: "http://allowed.test/sw.js", typ: "Other", headers: map[string]string{"service-worker": "script"}, want: "Fetch.continueRequest"},
		{name: "file scheme", url: "file:///etc/passwd", typ: "Document", want: "Fetch.failRequest"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &fakeSender{}
			if c.top {
				c.opts.Pages = isPage(c.frame)
			}
			j, stop := newJudge(t, s, c.opts)
			defer stop()
			j.Paused("S", paused("R1", c.url, c.typ, c.frame, c.headers))
			got := s.waitN(t, 1)
			time.Sleep(20 * time.Millisecond)
			if got := s.answers(); len(got) != 1 {
				t.Fatalf("answers = %v, want exactly one", got)
			}
			if got[0].method != c.want || got[0].session != "S" || got[0].params["requestId"] != "R1" {
				t.Fatalf("answer = %+v, want %s on S for R1", got[0], c.want)
			}
			if c.want == "Fetch.failRequest" && got[0].params["errorReason"] != "BlockedByClient" {
				t.Errorf("errorReason = %v", got[0].params["errorReason"])
			}
			if c.want == "Fetch.fulfillRequest" {
				body, _ := base64.StdEncoding.DecodeString(got[0].params["body"].(string))
				if got[0].params["responseCode"] != float64(403) || !strings.Contains(string(body), "allowed.test") {
					t.Errorf("fulfill = %v, body %s", got[0].params, body)
				}
			}
		})
	}
}

// TestDeadline: a pause the worker cannot get to in time is failed by its
// deadline, and the late worker does not answer it a second time.
func TestDeadline(t *testing.T) {
	s := &fakeSender{block: make(chan struct{})}
	j, stop := newJudge(t, s, Options{PauseTimeout: 50 * time.Millisecond})
	defer stop()
	j.Paused("S", paused("R1", "http://allowed.test/a", "Image", "", nil)) // the worker blocks in Send
	j.Paused("S", paused("R2", "http://allowed.test/b", "Image", "", nil)) // queued behind it
	time.Sleep(150 * time.Millisecond)
	close(s.block)
	s.waitN(t, 2)
	time.Sleep(50 * time.Millisecond)
	got := s.answers()
	count := map[string][]string{}
	for _, a := range got {
		id := fmt.Sprint(a.params["requestId"])
		count[id] = append(count[id], a.method)
	}
	if len(count["R1"]) != 1 || len(count["R2"]) != 1 {
		t.Fatalf("answers per request = %v, want exactly one each", count)
	}
	if count["R2"][0] != "Fetch.failRequest" {
		t.Errorf("R2 answered %v, want failRequest by the deadline", count["R2"])
	}
}

func TestUnreadablePause(t *testing.T) {
	s := &fakeSender{}
	j, stop := newJudge(t, s, Options{})
	defer stop()
	j.Paused("S", []byte(`{"requestId":"R9","request":"not an object"}`))
	got := s.waitN(t, 1)
	if got[0].method != "Fetch.failRequest" || got[0].params["requestId"] != "R9" {
		t.Fatalf("answer = %+v", got[0])
	}
}

func TestNilPolicyFails(t *testing.T) {
	s := &fakeSender{}
	j := New(s, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { j.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	j.Paused("", paused("R1", "http://allowed.test/", "Image", "", nil))
	if got := s.waitN(t, 1); got[0].method != "Fetch.failRequest" {
		t.Fatalf("answer = %+v", got[0])
	}
}

func TestExplanationPageEscapes(t *testing.T) {
	page := string(ExplanationPage(`http://evil.test/"><script>alert(1)</script>`, "blocked", []string{"a.test"}, "<b>ask</b>"))
	if strings.Contains(page, "<script>alert") || strings.Contains(page, "<b>ask</b>") {
		t.Fatalf("page not escaped: %s", page)
	}
	if !strings.Contains(page, "a.test") {
		t.Fatalf("origins missing: %s", page)
	}
}

// TestQueueFullFailsAtOnce: with the worker stuck and the queue full, Paused
// returns at once (the read loop is never blocked), fails the extra pause,
// and counts it.
func TestQueueFullFailsAtOnce(t *testing.T) {
	s := &fakeSender{}
	pol, err := policy.Parse([]string{"allowed.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var shed count
	j := New(s, Options{Policy: pol, QueueSize: 1, PauseTimeout: time.Minute, Shed: &shed})
	// Run is not started yet (a stuck worker): the queue of one fills with R1.
	j.Paused("S", paused("R1", "http://allowed.test/a", "Image", "", nil))
	returned := make(chan struct{})
	go func() {
		j.Paused("S", paused("R2", "http://allowed.test/b", "Image", "", nil))
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("Paused blocked on a full queue")
	}
	got := s.answers()
	if len(got) != 1 || got[0].method != "Fetch.failRequest" || got[0].params["requestId"] != "R2" || got[0].params["errorReason"] != "BlockedByClient" {
		t.Fatalf("answers = %+v, want R2 failed at once", got)
	}
	if shed != 1 {
		t.Errorf("Shed counted %d times, want 1", shed)
	}
	// The queued pause is still answered, once, when the worker runs.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { j.Run(ctx); close(done) }()
	got = s.waitN(t, 2)
	cancel()
	<-done
	if got[1].method != "Fetch.continueRequest" || got[1].params["requestId"] != "R1" {
		t.Fatalf("answers = %+v, want R1 continued", got)
	}
	if got := s.answers(); len(got) != 2 {
		t.Fatalf("answers = %+v, want exactly two", got)
	}
}

// TestStoppedJudgeFails: once Run has ended, every pause still waiting is
// failed (Chrome would let it go out when the connection closes), and a
// later pause is failed at once instead of blocking the read loop, however
// many come.
func TestStoppedJudgeFails(t *testing.T) {
	s := &fakeSender{}
	j := New(s, Options{QueueSize: 2, PauseTimeout: time.Minute})
	j.Paused("S", paused("R1", "http://allowed.test/a", "Image", "", nil)) // queued, never reached
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	j.Run(ctx) // ctx already over: Run stops at once (it may answer R1 first)
	got := s.answers()
	if len(got) != 1 || got[0].params["requestId"] != "R1" {
		t.Fatalf("answers after stop = %+v, want R1 answered once", got)
	}
	returned := make(chan struct{})
	go func() {
		for i := range 10 { // more than the queue holds
			j.Paused("S", paused(fmt.Sprintf("L%d", i), "http://allowed.test/late", "Image", "", nil))
		}
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("Paused blocked after the judge stopped")
	}
	got = s.answers()[1:]
	if len(got) != 10 {
		t.Fatalf("late answers = %+v, want 10", got)
	}
	for _, a := range got {
		if a.method != "Fetch.failRequest" {
			t.Fatalf("late pause answered %+v, want failRequest", a)
		}
	}
}

// TestReadLoopSender: the answers Paused gives itself on the read loop (a
// full queue, a stopped judge, an unreadable pause) go through
// ReadLoopSender, never the main sender, which may block behind another
// writer; the worker's answers go through the main sender.
func TestReadLoopSender(t *testing.T) {
	main := &fakeSender{block: make(chan struct{})} // a writer stuck behind a big message
	later := &fakeSender{}
	pol, err := policy.Parse([]string{"allowed.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	j := New(main, Options{Policy: pol, QueueSize: 1, PauseTimeout: time.Minute, ReadLoopSender: later})
	returned := make(chan struct{})
	go func() {
		j.Paused("S", paused("R1", "http://allowed.test/a", "Image", "", nil)) // queued
		j.Paused("S", paused("R2", "http://allowed.test/b", "Image", "", nil)) // shed
		j.Paused("S", []byte(`{"requestId":"R3","request":1}`))                // unreadable
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("Paused blocked on the main sender")
	}
	got := later.answers()
	if len(got) != 2 || got[0].params["requestId"] != "R2" || got[1].params["requestId"] != "R3" || got[0].method != "Fetch.failRequest" || got[1].method != "Fetch.failRequest" {
		t.Fatalf("read-loop answers = %+v, want R2 and R3 failed", got)
	}
	close(main.block)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { j.Run(ctx); close(done) }()
	if got := main.waitN(t, 1); got[0].params["requestId"] != "R1" || got[0].method != "Fetch.continueRequest" {
		t.Fatalf("worker answers = %+v, want R1 continued", got)
	}
	cancel()
	<-done
	j.Paused("S", paused("R4", "http://allowed.test/c", "Image", "", nil)) // after stop
	if got := later.answers(); len(got) != 3 || got[2].params["requestId"] != "R4" {
		t.Fatalf("read-loop answers = %+v, want R4 failed after stop", got)
	}
	if n := len(main.answers()); n != 1 {
		t.Errorf("main sender got %d answers, want only the worker's one", n)
	}
}

// TestSelfRefused: a request to the guard itself is failed (a top-level
// one gets the explanation page naming why) although the policy allows
// the address; the same address on another port continues.
func TestSelfRefused(t *testing.T) {
	p, err := policy.Parse([]string{"10.9.8.7", "allowed.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	self := selfAt{"10.9.8.7", 9222}
	for _, c := range []struct {
		url, typ, frame string
		top             bool
		want            string
	}{
		{url: "http://10.9.8.7:9222/json/list", typ: "Fetch", want: "Fetch.failRequest"},
		{url: "http://10.9.8.7:9222/json/close/T", typ: "Document", frame: "F1", want: "Fetch.failRequest"},
		{url: "http://user:pw@10.9.8.7:9222/metrics", typ: "Image", want: "Fetch.failRequest"},
		{url: "ws://10.9.8.7:9222/devtools/browser/x", typ: "WebSocket", want: "Fetch.failRequest"},
		{url: "http://10.9.8.7:9222/policy", typ: "Document", frame: "T1", top: true, want: "Fetch.fulfillRequest"},
		{url: "http://10.9.8.7:9223/", typ: "Fetch", want: "Fetch.continueRequest"},
		{url: "http://allowed.test:9222/", typ: "Fetch", want: "Fetch.continueRequest"},
	} {
		s := &fakeSender{}
		opts := Options{Policy: p, Self: self}
		if c.top {
			opts.Pages = isPage(c.frame)
		}
		j, stop := newJudge(t, s, opts)
		j.Paused("S", paused("R1", c.url, c.typ, c.frame, nil))
		got := s.waitN(t, 1)
		stop()
		if got[0].method != c.want {
			t.Errorf("%s: answer %s, want %s", c.url, got[0].method, c.want)
		}
		if c.want == "Fetch.fulfillRequest" {
			body, _ := base64.StdEncoding.DecodeString(got[0].params["body"].(string))
			if !strings.Contains(string(body), "own endpoint") {
				t.Errorf("explanation page does not say why: %s", body)
			}
		}
	}
}

// TestStopFailsHeldPauses: Stop answers, before it returns and in the
// caller's goroutine, every pause the judge holds, even while the worker
// is stuck sending another answer (the guard closes the browser
// connection right after Stop).
func TestStopFailsHeldPauses(t *testing.T) {
	release := make(chan struct{})
	s := &stuckSender{stuck: release, entered: make(chan struct{})}
	j, stop := newJudge(t, s, Options{})
	defer stop()
	j.Paused("S", paused("A", "http://allowed.test/a", "Image", "", nil))
	<-s.entered // the worker is stuck answering A
	j.Paused("S", paused("B", "http://evil.test/b", "Image", "", nil))
	j.Paused("S", paused("C", "http://allowed.test/c", "Image", "", nil))
	j.Stop()
	got := s.answers()
	if len(got) != 2 || got[0].method != "Fetch.failRequest" || got[1].method != "Fetch.failRequest" {
		t.Fatalf("answers when Stop returned: %+v, want B and C failed", got)
	}
	ids := map[any]bool{got[0].params["requestId"]: true, got[1].params["requestId"]: true}
	if !ids["B"] || !ids["C"] {
		t.Fatalf("failed %v, want B and C", ids)
	}
	j.Paused("S", paused("D", "http://allowed.test/d", "Image", "", nil))
	if got := s.answers(); len(got) != 3 || got[2].params["requestId"] != "D" || got[2].method != "Fetch.failRequest" {
		t.Fatalf("a pause after Stop: %+v, want it failed at once", got)
	}
	close(release)
}

// stuckSender blocks the first Send (the worker's) until stuck is closed
// and records the others at once.
type stuckSender struct {
	fakeSender
	stuck   chan struct{}
	entered chan struct{}
	once    sync.Once
}

func (s *stuckSender) Send(session, method string, params any) error {
	first := false
	s.once.Do(func() { first = true })
	if first {
		close(s.entered)
		<-s.stuck
	}
	return s.fakeSender.Send(session, method, params)
}

// count is a test's Counter.
type count int

func (c *count) Inc() { *c++ }

// selfAt is a guard listening on one host and port.
type selfAt struct {
	host string
	port int
}

func (s selfAt) IsSelf(host string, port int) bool { return host == s.host && port == s.port }
