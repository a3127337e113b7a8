package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
	"github.com/cdpguard/cdpguard/internal/reader"
)

// fixtureDir holds Mozilla Readability's real-world test pages (CI clones
// the repo with shared/ beside it).
const fixtureDir = "../../shared/fixtures/readability"

// Reader targets (issue 8).
const (
	minMeanRecall    = 0.97
	minMeanPrecision = 0.93
	maxSnapshotRatio = 0.25
)

// readerHost serves the fixture pages under /fx/<name>/ and the reader's
// own test pages (e2e/testdata/reader/) by the name allowed.test.
// /never answers only when the test ends: a subresource that keeps a page
// from finishing its load.
func readerHost(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/fx/{name}/", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if strings.ContainsAny(name, `/\.`) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		http.ServeFile(w, r, filepath.Join(fixtureDir, name, "source.html"))
	})
	mux.HandleFunc("/never", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-done:
		case <-r.Context().Done():
		}
	})
	mux.Handle("/", http.FileServer(http.Dir("testdata/reader")))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
	})
	return "http://" + testhosts.AllowedName + ":" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// readerGuard launches the one guard the reader tests share.
func readerGuard(t *testing.T, origin string) *cdpguard.Guard {
	t.Helper()
	cfg := guardConfig(t)
	cfg.SearchURL = origin + "/search"
	cfg.ReadLoadTimeout = 2 * time.Second
	return cdptest.StartGuard(t, cfg)
}

// TestReader reads pages through one guard: the fixture table (Playwright
// and Guard.read), sections, links, the search note, refusals, a hostile
// page, a page that never loads, GET /read, pages written by script after
// their load (Guard.read, GET /read, MCP browser_read).
func TestReader(t *testing.T) {
	parallelSuite(t) // own browser and test hosts: runs beside the other heavy suites, to keep CI under 10 minutes
	needBrowser(t)
	origin := readerHost(t)
	h := testhosts.Start(t)
	g := readerGuard(t, origin)
	t.Run("fixtures", func(t *testing.T) { readerFixtures(t, g, origin) })
	t.Run("cdp", func(t *testing.T) { readerCDP(t, g, origin, h) })
	t.Run("http", func(t *testing.T) { readerHTTP(t, g, origin, h) })
	t.Run("waits", func(t *testing.T) { readerWaits(t, g, h) })
}

type fixtureRead struct {
	Name            string   `json:"name"`
	SnapshotChars   int      `json:"snapshotChars"`
	ReadMS          int      `json:"readMs"`
	Text            string   `json:"text"`
	InnerText       string   `json:"innerText"`
	Error           string   `json:"error"`
	Summary         bool     `json:"summary"`
	OK              bool     `json:"ok"`
	Contexts        []string // summary: names of every context Playwright's sessions were told about
	IsolatedScripts []string // summary: the start of every isolated-world script the debugger reported
}

// readerFixtures prints per page and mean token precision/recall of the
// guard's text against expected.html (with CDPGUARD_READER_COMPARE=1 also
// its size against Playwright's ariaSnapshot and the body's innerText's
// scores); it fails under the targets.
func readerFixtures(t *testing.T, g *cdpguard.Guard, origin string) {
	node := needNode(t)
	dirs, err := filepath.Glob(filepath.Join(fixtureDir, "*", "expected.html"))
	if err != nil || len(dirs) == 0 {
		if !strict() {
			t.Skipf("skipping: no fixtures under %s (CI clones shared/ beside the repo)", fixtureDir)
		}
		t.Fatalf("CDPGUARD_E2E=1: no fixtures under %s (CI clones shared/ beside the repo): %v", fixtureDir, err)
	}
	var names []string
	want := map[string]string{}
	for _, p := range dirs {
		name := filepath.Base(filepath.Dir(p))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if want[name], err = reader.TextContent(string(b)); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	if only := os.Getenv("CDPGUARD_READER_FIXTURES"); only != "" { // to look at a few pages
		names = strings.Split(only, ",")
	}
	// The whole run's bound is a hang guard too, made of the steps' own:
	// three workers (reader.mjs) take the pages a step (60 s) at a time. A
	// flat 3 minutes killed the run at load 20 with 25 of 27 pages read
	// (about 21 s a page; 1 to 2.5 s on a quiet machine).
	const readWorkers, stepBound = 3, 60 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration((len(names)+readWorkers-1)/readWorkers)*stepBound+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "clients/reader.mjs")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	// CDPGUARD_READER_COMPARE=1 adds the comparisons of the README's table
	// (ariaSnapshot size, innerText); they are not scored against the truth,
	// so nothing here asserts them and CI leaves them out.
	compare := os.Getenv("CDPGUARD_READER_COMPARE") == "1"
	// A step's bound is a hang guard, not a speed target (that is
	// BenchmarkReadLoaded): on a fresh machine, beside the cold builds, reads
	// took up to 18 s and one page's load passed 20 s.
	cmd.Env = append(os.Environ(), "CDPGUARD_URL="+g.URL(), "FIXTURE_BASE="+origin+"/fx/",
		"FIXTURES="+strings.Join(names, ","), fmt.Sprintf("STEP_TIMEOUT_MS=%d", stepBound.Milliseconds()),
		fmt.Sprintf("READER_WORKERS=%d", readWorkers), "READER_COMPARE="+os.Getenv("CDPGUARD_READER_COMPARE"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var reads []fixtureRead
	var summary *fixtureRead
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var r fixtureRead
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue
		}
		var c struct {
			Contexts        []string `json:"contexts"`
			IsolatedScripts []string `json:"isolatedScripts"`
		}
		_ = json.Unmarshal(sc.Bytes(), &c)
		r.Contexts, r.IsolatedScripts = c.Contexts, c.IsolatedScripts
		if r.Summary {
			summary = &r
			continue
		}
		reads = append(reads, r)
	}
	if summary == nil || len(reads) != len(names) {
		t.Fatalf("node reader.mjs: %d of %d pages reported, exit %v\nstderr:\n%s", len(reads), len(names), runErr, stderr.String())
	}
	sort.Slice(reads, func(i, j int) bool { return reads[i].Name < reads[j].Name })
	var sumP, sumR float64
	var cmp *readerComparison // nil: no comparison columns
	if compare {
		cmp = &readerComparison{}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "| page | precision | recall | text chars | read ms |%s\n|---|---|---|---|---|%s\n", cmp.header(), cmp.rule())
	for _, r := range reads {
		if r.Error != "" {
			t.Errorf("%s: %s", r.Name, r.Error)
			continue
		}
		p, rec := reader.Score(bodyOf(r.Text), want[r.Name])
		sumP, sumR = sumP+p, sumR+rec
		if rec < 0.5 {
			t.Logf("%s: recall %.3f; the text read:\n%s", r.Name, rec, r.Text)
		}
		fmt.Fprintf(&table, "| %s | %.3f | %.3f | %d | %d |%s\n", r.Name, p, rec, len([]rune(r.Text)), r.ReadMS, cmp.add(r, want[r.Name]))
	}
	n := float64(len(reads))
	fmt.Fprintf(&table, "| **mean** | **%.3f** | **%.3f** | | |%s\n", sumP/n, sumR/n, cmp.mean(n))
	t.Logf("reader on %d fixture pages (token precision/recall against expected.html, <url> annotations stripped):\n%s%s",
		len(reads), table.String(), cmp.summary())
	if sumR/n < minMeanRecall || sumP/n < minMeanPrecision {
		t.Errorf("under target: mean recall %.3f (≥ %.2f), precision %.3f (≥ %.2f)", sumR/n, minMeanRecall, sumP/n, minMeanPrecision)
	}
	for _, name := range summary.Contexts {
		if strings.Contains(name, "cdpguard") {
			t.Errorf("an agent was told about the guard's isolated world %q", name)
		}
	}
	if len(summary.Contexts) == 0 {
		t.Errorf("control: Playwright's session saw no execution context at all")
	}
	for _, src := range summary.IsolatedScripts {
		if strings.Contains(src, "cdpguard") || strings.Contains(src, "readyState") {
			t.Errorf("the debugger showed an agent the guard's script %q", src)
		}
	}
	t.Logf("hidden worlds: %d execution contexts and %d isolated-world scripts reported to the agent", len(summary.Contexts), len(summary.IsolatedScripts))
	if !summary.OK {
		t.Errorf("node reader.mjs failed: %v\nstderr:\n%s", runErr, stderr.String())
	}
}

// readerComparison sums the README table's comparison columns: the
// reader's size against Playwright's ariaSnapshot, and the body's
// innerText scored as the reader is. A nil *readerComparison adds no
// columns.
type readerComparison struct {
	sumRatio, sumIP, sumIR float64
	textChars, snapChars   int
	ratios                 []float64
}

func (c *readerComparison) header() string {
	if c == nil {
		return ""
	}
	return " ariaSnapshot chars | ratio | body innerText P / R |"
}

func (c *readerComparison) rule() string {
	if c == nil {
		return ""
	}
	return "---|---|---|"
}

// add sums one page and returns its cells.
func (c *readerComparison) add(r fixtureRead, want string) string {
	if c == nil {
		return ""
	}
	ip, ir := reader.Score(r.InnerText, want)
	c.sumIP, c.sumIR = c.sumIP+ip, c.sumIR+ir
	ratioCell := "n/a (empty snapshot)"
	if r.SnapshotChars > 0 { // a page Playwright sees as blank has no ratio
		ratio := float64(len([]rune(r.Text))) / float64(r.SnapshotChars)
		c.sumRatio += ratio
		c.textChars, c.snapChars = c.textChars+len([]rune(r.Text)), c.snapChars+r.SnapshotChars
		c.ratios = append(c.ratios, ratio)
		ratioCell = fmt.Sprintf("%.2f", ratio)
	}
	return fmt.Sprintf(" %d | %s | %.2f / %.2f |", r.SnapshotChars, ratioCell, ip, ir)
}

func (c *readerComparison) mean(n float64) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf(" | **%.2f** | %.2f / %.2f |", c.sumRatio/float64(max(len(c.ratios), 1)), c.sumIP/n, c.sumIR/n)
}

func (c *readerComparison) summary() string {
	if c == nil || len(c.ratios) == 0 {
		return ""
	}
	sort.Float64s(c.ratios)
	return fmt.Sprintf("\ntext/ariaSnapshot chars: all pages %.2f, median %.2f (target ≤ %.2f)",
		float64(c.textChars)/float64(max(c.snapChars, 1)), c.ratios[len(c.ratios)/2], maxSnapshotRatio)
}

// bodyOf drops the Title/URL/Note lines the reader puts on top, which
// expected.html does not hold.
func bodyOf(text string) string {
	if _, body, ok := strings.Cut(text, "\n\n"); ok {
		return body
	}
	return text
}
