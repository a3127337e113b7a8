// Command readereval scores cdpguard's reader against human ground truth:
// the Article Extraction Benchmark (scrapinghub, MIT), L3S-GN1 (research
// use), Utomo & Leu's big9 and chaos sets (research use), CleanPortalEval
// and trafilatura's snippet-labelled set (Apache-2.0), fetched by
// scripts/reader-corpora.sh (see internal/reader/readeval). Every page is
// served from a loopback host (allowed.test), rendered by real Chromium
// through the guard, and read by each candidate on the same rendered page:
//
//   - guard: Guard.read, the product (header and <url> notes removed)
//   - innertext: document.body.innerText
//   - readability-js: Mozilla Readability, the JavaScript original, loaded
//     into the page from e2e/node_modules (the bench only)
//   - go-readability: the Readability port alone on the guard's rendered
//     DOM (the reader before issue 23)
//
// Scores are the AEB's: F1 of word 4-shingles (and of single words), mean
// precision and recall over pages, bootstrap error; trafilatura's pages are
// scored on their snippets (readeval.Page.Match). The held-out third is
// refused unless -final is given. Run it in a private network namespace:
//
//	unshare --net -- bash -c 'ip link set lo up && go run ./e2e/bench/readereval -corpora /tmp/reader-corpora'
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/internal/reader"
	"github.com/cdpguard/cdpguard/internal/reader/readeval"
	"github.com/cdpguard/cdpguard/js"
)

//go:embed readability_run.js
var readabilityRun string

// candidates in table order.
var candidates = []string{"innertext", "readability-js", "go-readability", "guard"}

type result struct {
	Corpus  string                     `json:"corpus"`
	ID      string                     `json:"id"`
	Truth   int                        `json:"truthChars"`
	Out     map[string]int             `json:"outChars"`
	Shingle map[string]readeval.Counts `json:"shingle"`
	Word    map[string]readeval.Counts `json:"word"`
	MS      map[string]float64         `json:"ms"`
	Text    map[string]string          `json:"text,omitempty"`
	// Broken is set when the rendered page holds under half of the truth's
	// words (a crawl cut short, a script that navigated the page to an
	// error page): no reader can score there, and the page is left out of
	// every candidate's score (the report counts them).
	Broken bool `json:"broken,omitempty"`
}

// broken reports whether the rendered DOM's body holds under half the
// truth's words. The head does not count: a crawl cut inside <title>
// holds the page as the title's text, and nothing renders.
func broken(truth, dom string) bool {
	text, err := readeval.BodyText(dom)
	if err != nil {
		return true
	}
	c := readeval.Match(truth, text, 1)
	return c.TP+c.FN == 0 || c.TP/(c.TP+c.FN) < 0.5
}

func main() {
	corpora := flag.String("corpora", os.Getenv("CDPGUARD_READER_CORPORA"), "directory scripts/reader-corpora.sh filled (aeb/, l3s/)")
	set := flag.String("set", "tune", "pages to score: tune, heldout or all (heldout and all need -final)")
	final := flag.Bool("final", false, "allow the held-out pages (the final check, never while tuning)")
	limit := flag.Int("limit", 0, "at most this many pages per corpus, spread evenly (0: all)")
	only := flag.String("id", "", "score only the page with this id (prefix)")
	chrome := flag.String("chrome", "", "Chromium binary (default: chromium on PATH)")
	rjs := flag.String("readability", "e2e/node_modules/@mozilla/readability/Readability.js", "Mozilla Readability source")
	out := flag.String("out", "", "write per-page results (JSON lines) here")
	texts := flag.Bool("texts", false, "keep every candidate's text in -out")
	flag.StringVar(&dumpDir, "dump", "", "save each page's rendered DOM (the guard's serialiser) here, for -offline")
	flag.BoolVar(&dumpOnly, "dumponly", false, "with -dump: load and save each page, score nothing (for -offline)")
	flag.StringVar(&offlineDir, "offline", "", "no browser: score the Go extractors on the DOMs a -dump run saved here")
	flag.Parse()
	if err := run(*corpora, readeval.Set(*set), *final, *limit, *only, *chrome, *rjs, *out, *texts); err != nil {
		fmt.Fprintln(os.Stderr, "readereval:", err)
		os.Exit(1)
	}
}

func run(corpora string, set readeval.Set, final bool, limit int, only, chrome, rjs, outPath string, keepTexts bool) error {
	if corpora == "" {
		return errors.New("no corpora: run scripts/reader-corpora.sh DIR and pass -corpora DIR")
	}
	all, err := readeval.Load(corpora)
	if err != nil {
		return err
	}
	pages, err := readeval.Select(all, set, final, limit)
	if err != nil {
		return err
	}
	if only != "" {
		var keep []readeval.Page
		for _, p := range pages {
			if strings.HasPrefix(p.ID, only) {
				keep = append(keep, p)
			}
		}
		pages = keep
	}
	if offlineDir != "" {
		return offline(pages, set, outPath, keepTexts)
	}
	src, err := os.ReadFile(rjs)
	if err != nil {
		return fmt.Errorf("mozilla readability (npm ci in e2e/): %w", err)
	}
	if chrome == "" {
		if chrome, err = exec.LookPath("chromium"); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
	defer cancel()
	origin, stop, err := serve(pages)
	if err != nil {
		return err
	}
	defer stop()
	flags := []string{"--disable-gpu", "--no-first-run", "--disable-sync", "--disable-background-networking", "--disable-component-update"}
	if os.Geteuid() == 0 {
		flags = append(flags, "--no-sandbox")
	}
	g, err := cdpguard.Launch(ctx, cdpguard.Config{
		Allow: []string{"allowed.test"}, HostMap: []string{"*.test=127.0.0.1"},
		ChromePath: chrome, ChromeFlags: flags, ReadLoadTimeout: 5 * time.Second,
	})
	if err != nil {
		return err
	}
	defer g.Close()
	actx, cancelAlloc := remote.NewAllocator(ctx, g.URL())
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	if err := chromedp.Do(tab); err != nil {
		return err
	}
	var w *json.Encoder
	if outPath != "" {
		f, err := os.Create(outPath)
		if err != nil {
			return err
		}
		defer f.Close()
		w = json.NewEncoder(f)
	}
	var results []result
	for i, p := range pages {
		r, err := measure(tab, origin, p, string(src))
		if err != nil {
			fmt.Fprintf(os.Stderr, "page %s/%s: %v\n", p.Corpus, p.ID, err)
			continue
		}
		if err := emit(w, &r, keepTexts); err != nil {
			return err
		}
		results = append(results, r)
		if (i+1)%25 == 0 {
			fmt.Fprintf(os.Stderr, "%d/%d pages\n", i+1, len(pages))
		}
	}
	report(os.Stdout, results, set, candidates)
	return nil
}

// serve serves every page at /p/<corpus>/<id> on allowed.test, as crawled.
func serve(pages []readeval.Page) (origin string, stop func(), err error) {
	byPath := map[string][]byte{}
	for _, p := range pages {
		byPath["/p/"+p.Corpus+"/"+p.ID] = p.HTML
	}
	// The AEB saved every page as UTF-8 (its sites said so in their
	// headers, which were not kept); L3S-GN1 kept each page's own bytes,
	// whose meta tags name their encodings.
	contentType := func(path string) string {
		if strings.HasPrefix(path, "/p/aeb/") {
			return "text/html; charset=utf-8"
		}
		return "text/html"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := byPath[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType(r.URL.Path))
		_, _ = w.Write(b)
	})}
	go func() { _ = srv.Serve(ln) }()
	return fmt.Sprintf("http://allowed.test:%d", ln.Addr().(*net.TCPAddr).Port), func() { _ = srv.Close() }, nil
}

var guardRead = cdp.Command[map[string]any, cdpguard.ReadResult]{Method: "Guard.read"}

// header is the reader's Title/URL/Note block; urlNote a link annotation.
var (
	header  = regexp.MustCompile(`(?s)^Title: .*?\n\n|^URL: .*?\n\n`)
	urlNote = regexp.MustCompile(` ?<https?://[^>\s]*>`)
)

// GuardBody is Guard.read's text without its header and link annotations,
// as the benchmark scored it.
func GuardBody(s string) string {
	return urlNote.ReplaceAllString(header.ReplaceAllString(s, ""), "")
}

func measure(tab context.Context, origin string, p readeval.Page, rsrc string) (result, error) {
	r := result{Corpus: p.Corpus, ID: p.ID, Truth: len([]rune(p.Truth)), Out: map[string]int{},
		Shingle: map[string]readeval.Counts{}, Word: map[string]readeval.Counts{}, MS: map[string]float64{}, Text: map[string]string{}}
	call := func(d time.Duration, a chromedp.Action[string]) (string, float64, error) {
		ctx, cancel := context.WithTimeout(tab, d)
		defer cancel()
		t0 := time.Now()
		s, err := chromedp.Run(ctx, a)
		return s, float64(time.Since(t0).Microseconds()) / 1000, err
	}
	ctx, cancel := context.WithTimeout(tab, 60*time.Second)
	res, err := chromedp.Call(ctx, guardRead, map[string]any{"url": origin + "/p/" + p.Corpus + "/" + p.ID, "maxChars": 1 << 30})
	cancel()
	if err != nil {
		return r, fmt.Errorf("guard read: %w", err)
	}
	r.Text["guard"] = GuardBody(res.Text)
	if dumpOnly {
		return r, dumpDOM(tab, p)
	}
	// The extraction alone, on the loaded page: read again without a url.
	ctx, cancel = context.WithTimeout(tab, 60*time.Second)
	t0 := time.Now()
	_, err = chromedp.Call(ctx, guardRead, map[string]any{"maxChars": 1 << 30})
	r.MS["guard"] = float64(time.Since(t0).Microseconds()) / 1000
	cancel()
	if err != nil {
		return r, fmt.Errorf("guard re-read: %w", err)
	}
	if r.Text["innertext"], r.MS["innertext"], err = call(30*time.Second, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`)); err != nil {
		return r, fmt.Errorf("innerText: %w", err)
	}
	// The guard's serialiser, in the main world this time, for the Go
	// candidates on the same rendered DOM.
	var page struct {
		URL   string `json:"url"`
		Title string `json:"title"`
		HTML  string `json:"html"`
	}
	ctx, cancel = context.WithTimeout(tab, 30*time.Second)
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](fmt.Sprintf("(%s)(true, %d)", js.Read, 4<<20)))
	cancel()
	if err != nil {
		return r, fmt.Errorf("serialise: %w", err)
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return r, err
	}
	r.Broken = broken(p.Truth, page.HTML)
	if dumpDir != "" {
		if err := os.MkdirAll(filepath.Join(dumpDir, p.Corpus), 0o755); err != nil {
			return r, err
		}
		if err := os.WriteFile(filepath.Join(dumpDir, p.Corpus, p.ID+".json"), raw, 0o644); err != nil {
			return r, err
		}
	}
	t0 = time.Now()
	text, err := reader.ExtractReadability(reader.Page{URL: page.URL, Title: page.Title, HTML: page.HTML})
	r.MS["go-readability"] = float64(time.Since(t0).Microseconds()) / 1000
	if err != nil {
		return r, err
	}
	r.Text["go-readability"] = urlNote.ReplaceAllString(text, "")
	if _, _, err = call(30*time.Second, chromedp.Evaluate[string](rsrc+"\n;\"\"")); err != nil {
		return r, fmt.Errorf("load readability: %w", err)
	}
	if r.Text["readability-js"], r.MS["readability-js"], err = call(30*time.Second, chromedp.Evaluate[string](readabilityRun)); err != nil {
		r.Text["readability-js"] = "" // Readability threw: it found nothing
	}
	for _, c := range candidates {
		r.Out[c] = len([]rune(r.Text[c]))
		r.Shingle[c] = p.Match(r.Text[c], 4)
		r.Word[c] = p.Match(r.Text[c], 1)
	}
	return r, nil
}

// report prints, per candidate, per corpus and pooled: shingle F1 ± error,
// precision, recall, word F1, output/truth length and ms per page; then the
// guard's pages under 0.5 F1 with a truth of at least 1,000 characters.
func report(w *os.File, results []result, set readeval.Set, candidates []string) {
	groups := map[string][]result{}
	left := map[string]int{}
	var scored []result
	// A run of both parts (set all) reports each corpus's tuning and
	// held-out parts apart, and each part pooled.
	part := func(r result) string {
		if set != readeval.All {
			return ""
		}
		if readeval.HeldOut(readeval.Page{Corpus: r.Corpus, ID: r.ID}) {
			return " held-out"
		}
		return " tune"
	}
	for _, r := range results {
		if r.Broken {
			left[r.Corpus+part(r)]++
			continue
		}
		scored = append(scored, r)
		groups[r.Corpus+part(r)] = append(groups[r.Corpus+part(r)], r)
		if p := part(r); p != "" {
			groups["pooled"+p] = append(groups["pooled"+p], r)
		}
	}
	groups["pooled, broken pages too"] = results
	results = scored
	names := make([]string, 0, len(groups))
	for k := range groups {
		if !strings.HasPrefix(k, "pooled") {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	if set == readeval.All {
		names = append(names, "pooled tune", "pooled held-out")
	}
	names = append(names, "pooled", "pooled, broken pages too")
	groups["pooled"] = results
	fmt.Fprintf(w, "set %s, %d pages scored; left out as broken in rendering (under half the truth's words in the rendered DOM): %v\n", set, len(results), left)
	fmt.Fprintln(w, "| corpus | candidate | pages | F1 (4-shingles) | P | R | word F1 | word P | word R | out/truth chars | ms/page |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, g := range names {
		rs := groups[g]
		for _, c := range candidates {
			var sh, wd []readeval.Counts
			var out, truth, ms float64
			for _, r := range rs {
				sh = append(sh, r.Shingle[c])
				wd = append(wd, r.Word[c])
				out += float64(r.Out[c])
				truth += float64(r.Truth)
				ms += r.MS[c]
			}
			s, wm := readeval.Score(sh), readeval.Score(wd)
			fmt.Fprintf(w, "| %s | %s | %d | %.3f ± %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f | %.0f |\n",
				g, c, len(rs), s.F1, s.F1Err, s.P, s.R, wm.F1, wm.P, wm.R, out/max(1, truth), ms/float64(max(1, len(rs))))
		}
	}
	fmt.Fprintf(w, "\n%s pages under 0.5 F1 with a truth of at least 1,000 characters:\n", candidates[len(candidates)-1])
	for _, r := range results {
		last := candidates[len(candidates)-1]
		if f := readeval.PageF1(r.Shingle[last]); f < 0.5 && r.Truth >= 1000 {
			fmt.Fprintf(w, "  %s/%s F1 %.2f out %d truth %d (readability-js F1 %.2f)\n", r.Corpus, r.ID, f, r.Out[last], r.Truth, readeval.PageF1(r.Shingle["readability-js"]))
		}
	}
}

// dumpDir and offlineDir are the -dump and -offline flags.
var (
	dumpDir, offlineDir string
	dumpOnly            bool
)

// dumpDOM saves the page's rendered DOM as the guard's serialiser writes it.
func dumpDOM(tab context.Context, p readeval.Page) error {
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](fmt.Sprintf("(%s)(true, %d)", js.Read, 4<<20)))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dumpDir, p.Corpus), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dumpDir, p.Corpus, p.ID+".json"), raw, 0o644)
}

// offline scores the Go extractors on saved DOMs: seconds instead of a
// browser run, for tuning (the held-out refusal applies the same).
func offline(pages []readeval.Page, set readeval.Set, outPath string, keepTexts bool) error {
	var w *json.Encoder
	if outPath != "" {
		f, err := os.Create(outPath)
		if err != nil {
			return err
		}
		defer f.Close()
		w = json.NewEncoder(f)
	}
	cands := []string{"go-readability", "extract"}
	var results []result
	for _, p := range pages {
		raw, err := os.ReadFile(filepath.Join(offlineDir, p.Corpus, p.ID+".json"))
		if err != nil {
			continue
		}
		var page reader.Page
		if err := json.Unmarshal(raw, &page); err != nil {
			return err
		}
		r := result{Corpus: p.Corpus, ID: p.ID, Truth: len([]rune(p.Truth)), Out: map[string]int{},
			Shingle: map[string]readeval.Counts{}, Word: map[string]readeval.Counts{}, MS: map[string]float64{}, Text: map[string]string{}}
		r.Broken = broken(p.Truth, page.HTML)
		if keepTexts {
			r.Text["truth"] = p.Truth
		}
		for _, c := range cands {
			extract := reader.Extract
			if c == "go-readability" {
				extract = reader.ExtractReadability
			}
			t0 := time.Now()
			text, err := extract(page)
			r.MS[c] = float64(time.Since(t0).Microseconds()) / 1000
			if err != nil {
				return err
			}
			text = urlNote.ReplaceAllString(text, "")
			r.Text[c] = text
			r.Out[c] = len([]rune(text))
			r.Shingle[c] = p.Match(text, 4)
			r.Word[c] = p.Match(text, 1)
		}
		if err := emit(w, &r, keepTexts); err != nil {
			return err
		}
		results = append(results, r)
	}
	report(os.Stdout, results, set, cands)
	return nil
}

// emit writes r to w (nil: no output file), with its texts only when
// keepTexts, and then drops the texts from r, which stays in memory.
func emit(w *json.Encoder, r *result, keepTexts bool) error {
	if w != nil {
		if !keepTexts {
			r.Text = nil
		}
		if err := w.Encode(r); err != nil {
			return err
		}
	}
	r.Text = nil
	return nil
}
