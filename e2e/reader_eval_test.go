package e2e

import (
	"context"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
	"github.com/cdpguard/cdpguard/internal/reader/readeval"
)

// readerEvalPerCorpus is the CI sample: this many tuning pages of each
// corpus, spread evenly (the full run is e2e/bench/readereval).
const readerEvalPerCorpus = 4

// urlNoteRE matches the reader's " <url>" link notes.
var urlNoteRE = regexp.MustCompile(` ?<https?://[^>\s]*>`)

// timedReaderEvalSample scores Guard.read on a small fixed sample of the
// human-labelled corpora (scripts/reader-corpora.sh DIR, then
// CDPGUARD_READER_CORPORA=DIR), rendered in real Chromium through the
// guard, against document.body.innerText of the same rendered pages. It
// fails when the reader falls under a floor well below the full run's
// figures or is not clearly above innerText. Held-out pages are never in
// the sample (readeval.Select refuses them without final).
func timedReaderEvalSample(t *testing.T) {
	dir := os.Getenv("CDPGUARD_READER_CORPORA")
	if dir == "" {
		t.Skip("CDPGUARD_READER_CORPORA is not set: run scripts/reader-corpora.sh DIR and set it to DIR")
	}
	needBrowser(t)
	all, err := readeval.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := readeval.Select(all, readeval.Tune, false, readerEvalPerCorpus)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string][]byte{}
	for _, p := range pages {
		byPath["/p/"+p.Corpus+"/"+p.ID] = p.HTML
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := byPath[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		ct := "text/html"
		if strings.HasPrefix(r.URL.Path, "/p/aeb/") {
			ct += "; charset=utf-8" // the AEB saved its pages as UTF-8
		}
		w.Header().Set("Content-Type", ct)
		_, _ = w.Write(b)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	origin := "http://" + testhosts.AllowedName + ":" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)

	cfg := guardConfig(t)
	cfg.ReadLoadTimeout = 5 * time.Second
	g := cdptest.StartGuard(t, cfg)
	tab := newTab(t, connect(t, g.URL()))
	var got, base []readeval.Counts
	for _, p := range pages {
		r, err := guardRead(tab, map[string]any{"url": origin + "/p/" + p.Corpus + "/" + p.ID, "maxChars": 1 << 30})
		if err != nil {
			t.Fatalf("%s/%s: %v", p.Corpus, p.ID, err)
		}
		body := r.Text
		if i := strings.Index(body, "\n\n"); i >= 0 {
			body = body[i+2:] // the Title/URL/Note header
		}
		body = urlNoteRE.ReplaceAllString(body, "")
		ctx, cancel := context.WithTimeout(tab, 10*time.Second)
		inner, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Match(body, 4))
		base = append(base, p.Match(inner, 4))
		t.Logf("%s/%s: F1 %.2f (innerText %.2f)", p.Corpus, p.ID[:min(12, len(p.ID))], readeval.PageF1(got[len(got)-1]), readeval.PageF1(base[len(base)-1]))
	}
	m, b := readeval.Score(got), readeval.Score(base)
	t.Logf("sample of %d pages: reader F1 %.3f P %.3f R %.3f; innerText F1 %.3f", m.N, m.F1, m.P, m.R, b.F1)
	if m.F1 < 0.85 || m.F1 < b.F1+0.1 {
		t.Errorf("reader F1 %.3f on the sample: want at least 0.85 and 0.1 above innerText (%.3f)", m.F1, b.F1)
	}
}
