package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeBrowser answers the few CDP commands the tests need and can close
// its agent connections the way the guard does when the browser restarts.
type fakeBrowser struct {
	mu       sync.Mutex
	conns    []*AgentSide
	opens    int
	hang     chan struct{} // Page.navigate waits on it unless noHang
	noHang   bool
	inFlight atomic.Int32
	maxSeen  atomic.Int32
	wg       sync.WaitGroup
}

func (f *fakeBrowser) Open(ctx context.Context, user string, p *Pipe) (<-chan struct{}, error) {
	a := p.AgentSide()
	f.mu.Lock()
	f.conns = append(f.conns, a)
	f.opens++
	hang := f.hang
	if f.noHang {
		hang = nil
	}
	f.mu.Unlock()
	done := make(chan struct{})
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer close(done)
		for {
			msg, err := a.Read(context.Background())
			if err != nil {
				return
			}
			var m struct {
				ID     int64  `json:"id"`
				Method string `json:"method"`
			}
			_ = json.Unmarshal(msg, &m)
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				n := f.inFlight.Add(1)
				for old := f.maxSeen.Load(); n > old && !f.maxSeen.CompareAndSwap(old, n); old = f.maxSeen.Load() {
				}
				res := `{}`
				switch m.Method {
				case "Target.getTargets":
					res = `{"targetInfos":[{"targetId":"T1","type":"page","title":"t","url":"about:blank","attached":false,"canAccessOpener":false}]}`
				case "Target.attachToTarget":
					res = `{"sessionId":"S1"}`
				case "Page.navigate":
					if hang != nil {
						<-hang
						f.inFlight.Add(-1)
						return
					}
					time.Sleep(20 * time.Millisecond)
					res = `{"frameId":"T1"}`
				case "Target.getTargetInfo":
					res = `{"targetInfo":{"targetId":"T1","type":"page","title":"t","url":"http://ok.test/","attached":true,"canAccessOpener":false}}`
				}
				f.inFlight.Add(-1) // before the reply: the caller may send the next command at once
				_ = a.Write(context.Background(), []byte(`{"id":`+itoa(m.ID)+`,"result":`+res+`}`))
			}()
		}
	}()
	return done, nil
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func (f *fakeBrowser) Dispose(context.Context, string) (string, error) { return "closed", nil }

func newTestServer(t *testing.T, fb *fakeBrowser) *mcp.ClientSession {
	t.Helper()
	return newTestServerWith(t, fb, Options{})
}

// newTestServerWith is newTestServer with opts (Backend, Origins, Decide
// and SessionHeader are set here).
func newTestServerWith(t *testing.T, fb *fakeBrowser, opts Options) *mcp.ClientSession {
	t.Helper()
	opts.Backend, opts.Origins, opts.SessionHeader = fb, []string{"http://ok.test"}, "X-User"
	opts.Decide = func(_, u string) (bool, string) { return strings.Contains(u, "ok.test"), "not in the allowlist" }
	s := New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.mcp.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Close()
		cancel()
		<-done
		if fb.hang != nil {
			close(fb.hang)
		}
		fb.wg.Wait()
	})
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func TestUnknownToolIsToolError(t *testing.T) {
	cs := newTestServer(t, &fakeBrowser{})
	out, isErr := callTool(t, cs, "browser_fly", nil)
	if !isErr || !strings.Contains(out, "browser_navigate") {
		t.Fatalf("unknown tool: isError=%v %q", isErr, out)
	}
}

func TestBlockedURLListsOrigins(t *testing.T) {
	fb := &fakeBrowser{}
	cs := newTestServer(t, fb)
	out, isErr := callTool(t, cs, "browser_navigate", map[string]any{"url": "http://evil.test/x"})
	if !isErr || !strings.Contains(out, "evil.test") || !strings.Contains(out, "http://ok.test") {
		t.Fatalf("blocked: isError=%v %q", isErr, out)
	}
	if fb.opens != 0 {
		t.Errorf("a blocked URL opened a browser connection")
	}
}

// TestConnectionClosedUnderCall: the guard closing the agent connection
// (browser restart, shutdown) ends a call in flight with a clear error, and
// the next call opens a new connection.
func TestConnectionClosedUnderCall(t *testing.T) {
	fb := &fakeBrowser{hang: make(chan struct{})}
	cs := newTestServer(t, fb)
	go func() {
		for {
			fb.mu.Lock()
			n := len(fb.conns)
			fb.mu.Unlock()
			if n > 0 && fb.inFlight.Load() > 0 {
				fb.mu.Lock()
				_ = fb.conns[0].Close(1011, "cdpguard: the browser connection was lost")
				fb.mu.Unlock()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	start := time.Now()
	out, isErr := callTool(t, cs, "browser_navigate", map[string]any{"url": "http://ok.test/"})
	if !isErr || !strings.Contains(out, "browser connection was lost") {
		t.Fatalf("call under a closed connection: isError=%v %q", isErr, out)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the call took %v", d)
	}
	fb.mu.Lock()
	fb.noHang = true
	fb.mu.Unlock()
	if out, isErr := callTool(t, cs, "browser_navigate", map[string]any{"url": "http://ok.test/"}); isErr {
		t.Fatalf("the call after the loss did not reconnect: %q", out)
	}
}

// TestOneCallAtATime: parallel calls of one user never overlap.
func TestOneCallAtATime(t *testing.T) {
	fb := &fakeBrowser{}
	cs := newTestServer(t, fb)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_navigate", Arguments: map[string]any{"url": "http://ok.test/"}})
		}()
	}
	wg.Wait()
	if fb.maxSeen.Load() > 1 {
		t.Fatalf("%d commands of one user were in flight at once", fb.maxSeen.Load())
	}
}

// TestUploadToolOnlyWithUploadDir: no tool touches local files unless the
// operator named an upload directory.
func TestUploadToolOnlyWithUploadDir(t *testing.T) {
	for _, on := range []bool{false, true} {
		s := New(Options{Backend: &fakeBrowser{}, UploadEnabled: on})
		if s.known["browser_file_upload"] != on {
			t.Errorf("UploadEnabled=%v: browser_file_upload registered=%v", on, s.known["browser_file_upload"])
		}
		for name := range s.known {
			if strings.Contains(name, "run_code") || strings.Contains(name, "install") {
				t.Errorf("tool %s runs code outside the browser", name)
			}
		}
	}
}
