package cdpguard_test

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/cdpguard/cdpguard/cdpguard"
)

func needBrowser(t *testing.T) { cdpguard.NeedBrowser(t) }

// testLogger logs at debug level under go test -v, but not under go test
// -json (which sets -test.v=test2json, as scripts/test.sh runs the suite).
func testLogger(t *testing.T) *slog.Logger {
	if v := flag.Lookup("test.v"); testing.Verbose() && (v == nil || v.Value.String() != "test2json") {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func TestExample(t *testing.T) {
	needBrowser(t)
	Example()
}

// TestGuardedChromedp drives a guarded browser with chromedp: an allowed
// page loads, its image on a forbidden host never reaches that host, and a
// navigation to the forbidden host shows the explanation page.
func TestGuardedChromedp(t *testing.T) {
	needBrowser(t)
	var evilHits atomic.Int64
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { evilHits.Add(1) }))
	defer evil.Close()
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "evil.test", 1)
	var okHits atomic.Int64
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		okHits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<title>ok</title><img src="`+evilURL+`/img.png"><p>allowed page</p>`)
	}))
	defer ok.Close()
	okURL := strings.Replace(ok.URL, "127.0.0.1", "allowed.test", 1)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := cdpguard.Launch(ctx, cdpguard.Config{
		Allow: []string{"allowed.test"}, HostMap: []string{"*.test=127.0.0.1"},
		Instructions: "Ask the operator.", Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	actx, acancel := remote.NewAllocator(ctx, g.URL())
	defer acancel()
	tctx, tcancel := chromedp.NewContext(actx)
	defer tcancel()
	if err := chromedp.Do(tctx, chromedp.Navigate(okURL)); err != nil {
		t.Fatal(err)
	}
	title, err := chromedp.Run(tctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	if title != "ok" || okHits.Load() == 0 {
		t.Fatalf("allowed page: title %q, hits %d", title, okHits.Load())
	}
	if err := chromedp.Do(tctx, chromedp.Navigate(evilURL+"/")); err != nil {
		t.Fatal(err)
	}
	body, err := chromedp.Run(tctx, chromedp.Text("body"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "allowed.test") || !strings.Contains(body, "Ask the operator.") {
		t.Errorf("explanation page = %q", body)
	}
	time.Sleep(300 * time.Millisecond)
	if n := evilHits.Load(); n != 0 {
		t.Fatalf("forbidden host saw %d requests", n)
	}
}
