package scopes

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/users"
)

// contextBrowser makes contexts "CTX-n" and records each call's method
// and params.
type contextBrowser struct {
	mu    sync.Mutex
	calls []string
	n     int
}

func (b *contextBrowser) Call(_ context.Context, _, method string, params any) (jsonv2.Value, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, _ := jsonv2.Marshal(params)
	b.calls = append(b.calls, method+" "+string(p))
	if method == "Target.createBrowserContext" {
		b.n++
		return jsonv2.Value(`{"browserContextId":"CTX-` + string(rune('0'+b.n)) + `"}`), nil
	}
	return jsonv2.Value(`{}`), nil
}

// TestContexts: a user's context is created with its download behavior
// set before it is used, its scope bound to it; a failed download
// behavior disposes it; disposing it ends the session's scope; without an
// egress proxy no proxy settings are given, and other contexts of the
// user are refused while the user has no session.
func TestContexts(t *testing.T) {
	b := &contextBrowser{}
	files := &failingFiles{}
	tb := New(Deps{
		Browser: b, Life: goFunc(func(f func()) bool { go f(); return true }),
		Policy: testPolicy(t),
		Files:  files,
		Log:    slog.New(slog.DiscardHandler),
	})
	ctx := context.Background()
	id, err := tb.Create(ctx, "alice")
	if err != nil || id != "CTX-1" {
		t.Fatalf("create: %q %v", id, err)
	}
	want := []string{`Target.createBrowserContext {}`, `Browser.setDownloadBehavior {"browserContextId":"CTX-1"}`}
	if !slices.Equal(b.calls, want) {
		t.Fatalf("calls %q, want %q", b.calls, want)
	}
	u := &users.User{Key: "alice", Primary: id}
	if sc := tb.OfUser(u); sc == nil || sc.Key() != "alice" {
		t.Fatalf("the new context's scope: %+v", sc)
	}
	p, err := tb.ContextParams(u, map[string]jsonv2.Value{"disposeOnDetach": jsonv2.Value("true")})
	if err != nil || len(p) != 1 {
		t.Fatalf("context params without a proxy: %v %v", p, err)
	}
	if _, err := tb.ContextParams(&users.User{Key: "bob", Primary: "none"}, nil); err == nil {
		t.Fatal("a user without a session got context params")
	}
	if err := tb.Dispose(ctx, id); err != nil || tb.OfUser(u) != nil {
		t.Fatalf("dispose: %v, scope left: %v", err, tb.OfUser(u) != nil)
	}
	files.fail = true
	b.calls = nil
	if _, err := tb.Create(ctx, "bob"); err == nil || !strings.Contains(err.Error(), "download behavior") {
		t.Fatalf("create without a download behavior: %v", err)
	}
	if last := b.calls[len(b.calls)-1]; !strings.HasPrefix(last, "Target.disposeBrowserContext") {
		t.Fatalf("the context without a download behavior was not disposed: %q", b.calls)
	}
}

// failingFiles gives every context the download params naming it, or
// fails when fail is set.
type failingFiles struct{ fail bool }

func (f *failingFiles) Defaults(_, id string) (map[string]any, error) {
	if f.fail {
		return nil, errors.New("no directory")
	}
	return map[string]any{"browserContextId": id}, nil
}
