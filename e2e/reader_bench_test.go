package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// BenchmarkReadLoaded reads an already-loaded article of about 100 kB
// (medium-1: 120 kB of HTML) through Guard.read on a chromedp tab: the
// guard's isolated world, the DOM serialised, extraction and writing.
// Target ≤ 150 ms a read.
//
//	unshare --net -- bash -c 'ip link set lo up && CDPGUARD_E2E=1 go test -run XXX -bench BenchmarkReadLoaded ./e2e/'
func BenchmarkReadLoaded(b *testing.B) {
	path, err := chromePath()
	if err != nil {
		if strict() {
			b.Fatalf("CDPGUARD_E2E=1: %v", err)
		}
		b.Skipf("skipping: %v", err)
	}
	origin := readerHost(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	g, err := cdpguard.Launch(ctx, cdpguard.Config{
		Allow: []string{testhosts.AllowedName}, HostMap: []string{"*.test=127.0.0.1"},
		ChromePath: path, ChromeFlags: browserFlags(),
	})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	actx, cancelAlloc := remote.NewAllocator(ctx, g.URL())
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	if err := chromedp.Do(tab); err != nil {
		b.Fatal(err)
	}
	r, err := guardRead(tab, map[string]any{"url": origin + "/fx/medium-1/"})
	if err != nil || !strings.Contains(r.Text, "URL: "+origin) {
		b.Fatalf("first read: %v", err)
	}
	for b.Loop() {
		if _, err := guardRead(tab, map[string]any{}); err != nil {
			b.Fatal(err)
		}
	}
}
