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
// timeout sentence (a TimeoutError, not a refusal) and the user's next
// call runs at once on a fresh connection.
func TestTimeoutFreesTheUser(t *testing.T) {
	fb := &fakeBrowser{hang: make(chan struct{})}
	s := New(Options{Backend: fb, CallTimeout: 300 * time.Millisecond})
	u := newUser(s, "")
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.CallTimeout)
	defer cancel()
	t.Cleanup(func() { close(fb.hang); u.reset(); fb.wg.Wait() })
	tb, err := u.page(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	err = u.navigate(ctx, tb, "http://ok.test/slow", 0)
	if ctx.Err() == nil || err == nil {
		t.Fatalf("navigate to a hanging page: %v", err)
	}
	te := u.timeoutErr("browser_navigate", s.opts.CallTimeout)
	if !errors.Is(te, ErrTimeout) || errors.Is(te, ErrRefused) || !strings.Contains(te.Error(), "did not finish loading") && !strings.Contains(te.Error(), "loading the page at http://ok.test/slow did not finish within") {
		t.Fatalf("timeout error: %v", te)
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
