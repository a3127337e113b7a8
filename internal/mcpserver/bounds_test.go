package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTimeoutFreesTheUser: a call that hits its bound ends with the
// timeout sentence (not a refusal) and the user's next call runs at once on
// a fresh connection.
func TestTimeoutFreesTheUser(t *testing.T) {
	fb := &fakeBrowser{hang: make(chan struct{})}
	cs := newTestServerWith(t, fb, Options{CallTimeout: 300 * time.Millisecond})
	t0 := time.Now()
	out, isErr := callTool(t, cs, "browser_navigate", map[string]any{"url": "http://ok.test/slow"})
	if !isErr || !strings.Contains(out, "loading the page at http://ok.test/slow did not finish within 300ms") || strings.Contains(out, "blocked") {
		t.Fatalf("hanging navigation: isError=%v %q", isErr, out)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("the call took %v", d)
	}
	fb.mu.Lock()
	fb.noHang = true
	opens := fb.opens
	fb.mu.Unlock()
	t0 = time.Now()
	if out, isErr := callTool(t, cs, "browser_navigate", map[string]any{"url": "http://ok.test/"}); isErr {
		t.Fatalf("the next call: %q", out)
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("the next call took %v", d)
	}
	if fb.opens != opens+1 {
		t.Errorf("the next call did not open a fresh connection (%d opens before, %d after)", opens, fb.opens)
	}
}

// TestEveryPropertySingleTyped walks tools/list: every input property has
// one JSON type.
func TestEveryPropertySingleTyped(t *testing.T) {
	cs := newTestServer(t, &fakeBrowser{})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, tl := range res.Tools {
		b, _ := mcpJSON(tl)
		size += len(b)
		sc, _ := tl.InputSchema.(map[string]any)
		props, _ := sc["properties"].(map[string]any)
		walkTypes(t, tl.Name, props)
	}
	t.Logf("tools/list: %d tools, %d characters", len(res.Tools), size)
}

func walkTypes(t *testing.T, tool string, props map[string]any) {
	for name, p := range props {
		pm, _ := p.(map[string]any)
		if _, ok := pm["type"].(string); !ok {
			t.Errorf("%s.%s: type %v is not a single JSON type", tool, name, pm["type"])
		}
		if sub, ok := pm["properties"].(map[string]any); ok {
			walkTypes(t, tool, sub)
		}
		if it, ok := pm["items"].(map[string]any); ok {
			if sub, ok := it["properties"].(map[string]any); ok {
				walkTypes(t, tool, sub)
			}
		}
	}
}

func TestEvaluateTakesExpressionOrFunction(t *testing.T) {
	for src, fn := range map[string]bool{
		"() => document.title": true, "async () => 1": true, "x => x": true, "function () { return 1 }": true,
		"document.title": false, "[1,2].map(x => x)": false, "1 + 1": false,
	} {
		if isFunction(src) != fn {
			t.Errorf("isFunction(%q) = %v", src, !fn)
		}
	}
	if got := cut(strings.Repeat("a", 50), 10); !strings.Contains(got, "40 more characters were left out of 50") {
		t.Errorf("cut: %q", got)
	}
}

func TestRefusedScheme(t *testing.T) {
	s := New(Options{Backend: &fakeBrowser{}, Origins: []string{"http://ok.test"}})
	err := s.checkURL("", "file:///etc/passwd")
	var re *RefusedError
	if !errors.As(err, &re) || re.Scheme != "file" || !strings.Contains(err.Error(), "file: scheme is refused") {
		t.Fatalf("file URL: %v", err)
	}
}

func mcpJSON(tl *mcp.Tool) ([]byte, error) { return json.Marshal(tl) }

// TestIdleDisposalSaid: after the sweep let a user go and the guard
// disposed its context, the next call says the state was cleared and why.
func TestIdleDisposalSaid(t *testing.T) {
	fb := &fakeBrowser{noHang: true}
	s := New(Options{Backend: fb, Linger: time.Millisecond, HasState: func(string) bool { return false }})
	u, err := s.userFor(nil)
	if err != nil {
		t.Fatal(err)
	}
	u.lastUse = time.Now().Add(-time.Hour)
	s.sweep()
	u2, err := s.userFor(nil)
	if err != nil {
		t.Fatal(err)
	}
	if u2 == u || u2.idleSince.IsZero() {
		t.Fatal("the swept user was not remembered")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := u2.connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { u2.reset(); fb.wg.Wait() }()
	if notes := strings.Join(u2.takeNotes(), " "); !strings.Contains(notes, "was cleared") || !strings.Contains(notes, "--session-idle") {
		t.Fatalf("notes: %q", notes)
	}
}
