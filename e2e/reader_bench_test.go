package e2e

import (
	"context"
	"path/filepath"
	"slices"
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
	tab, origin := benchReaderTab(b)
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

// BenchmarkReadFixtures opens and reads every fixture page (static saved
// articles) with Guard.read's url, load and settle included: what the
// reader's wait for a page's scripts costs a page that has none to wait
// for. It reports the median and the slowest page's median, in ms; one
// iteration reads every page once (run it with -benchtime=3x or more).
//
//	unshare --net -- bash -c 'ip link set lo up && CDPGUARD_E2E=1 go test -run XXX -bench BenchmarkReadFixtures -benchtime=3x ./e2e/'
func BenchmarkReadFixtures(b *testing.B) {
	dirs, err := filepath.Glob(filepath.Join(fixtureDir, "*", "source.html"))
	if err != nil || len(dirs) == 0 {
		b.Skipf("skipping: no fixtures under %s: %v", fixtureDir, err)
	}
	tab, origin := benchReaderTab(b)
	took := map[string][]time.Duration{}
	for b.Loop() {
		for _, d := range dirs {
			name := filepath.Base(filepath.Dir(d))
			start := time.Now()
			if _, err := guardRead(tab, map[string]any{"url": origin + "/fx/" + name + "/"}); err != nil {
				b.Fatalf("%s: %v", name, err)
			}
			took[name] = append(took[name], time.Since(start))
		}
	}
	var all, perPage []time.Duration
	for name, ds := range took {
		all = append(all, ds...)
		m := median(ds)
		perPage = append(perPage, m)
		b.Logf("%s: median %v of %d", name, m.Round(time.Millisecond), len(ds))
	}
	b.ReportMetric(float64(median(all).Milliseconds()), "median-ms")
	b.ReportMetric(float64(slices.Max(perPage).Milliseconds()), "slowest-page-median-ms")
}

// benchReaderTab launches a guard over the reader's test host and returns
// a chromedp tab on it and the host's origin; both end with b.
func benchReaderTab(b *testing.B) (context.Context, string) {
	path, err := chromePath()
	if err != nil {
		if strict() {
			b.Fatalf("CDPGUARD_E2E=1: %v", err)
		}
		b.Skipf("skipping: %v", err)
	}
	origin := readerHost(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	g, err := cdpguard.Launch(ctx, cdpguard.Config{
		Allow: []string{testhosts.AllowedName}, HostMap: []string{"*.test=127.0.0.1"},
		ChromePath: path, ChromeFlags: browserFlags(),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = g.Close() })
	actx, cancelAlloc := remote.NewAllocator(ctx, g.URL())
	b.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(actx)
	b.Cleanup(cancelTab)
	if err := chromedp.Do(tab); err != nil {
		b.Fatal(err)
	}
	return tab, origin
}
