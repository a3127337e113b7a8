package e2e

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// strict reports whether CDPGUARD_E2E=1: then a missing prerequisite fails
// instead of skipping.
func strict() bool { return os.Getenv("CDPGUARD_E2E") == "1" }

// directMode reports whether the endpoint is a plain Chromium (harness
// self-check) instead of the guard.
func directMode() bool { return os.Getenv("CDPGUARD_E2E_TARGET") == "direct" }

// chromePath finds the browser once per test binary.
var chromePath = sync.OnceValues(func() (string, error) {
	if p := os.Getenv("CHROME_PATH"); p != "" {
		return exec.LookPath(p)
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium, chromium-browser or google-chrome on PATH (set CHROME_PATH)")
})

// nodeSetup finds node and the installed npm packages once.
var nodeSetup = sync.OnceValues(func() (string, error) {
	p, err := exec.LookPath("node")
	if err != nil {
		return "", fmt.Errorf("node not on PATH: %w", err)
	}
	for _, pkg := range []string{"playwright-core", "puppeteer-core"} {
		if _, err := os.Stat(filepath.Join("node_modules", pkg, "package.json")); err != nil {
			return "", fmt.Errorf("e2e/node_modules/%s missing: run `npm ci --ignore-scripts` in e2e/: %w", pkg, err)
		}
	}
	return p, nil
})

func TestMain(m *testing.M) {
	if _, err := chromePath(); err != nil {
		if strict() {
			fmt.Fprintf(os.Stderr, "e2e: CDPGUARD_E2E=1 but %v\n", err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "e2e: browser tests will skip: %v (set CDPGUARD_E2E=1 to make this a failure)\n", err)
	}
	if err := defaultParallel(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(2)
	}
	code := m.Run()
	if dir, err := e2eBinDir(); err == nil {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

// suitesAtOnce is how many parallel suites run at once (the suite gate's
// limit, suitegate_test.go) unless -parallel is given: go test's default
// is GOMAXPROCS, two on the CI machine, and at
// two the suites used 1.26 of its two cores (their vectors wait on pages,
// timers and hits more than they compute): the e2e package took 463 s. At
// three it used 1.77 cores and took 306 s, every bound held
// (docs/decisions/2026-12-02-ci-time.md, "Three suites at once").
const suitesAtOnce = 3

// goParallel is go test's own -parallel in this binary: more than there
// are suites, so that the suite gate alone decides which suite runs.
const goParallel = 64

// defaultParallel gives the suite gate the -parallel of the command line
// (suitesAtOnce when it has none) and sets go test's own to goParallel.
func defaultParallel() error {
	flag.Parse()
	if f := flag.Lookup("test.parallel"); f != nil {
		given := false
		flag.Visit(func(v *flag.Flag) { given = given || v.Name == "test.parallel" })
		if given {
			n, err := strconv.Atoi(f.Value.String())
			if err != nil || n < 1 {
				return fmt.Errorf("-test.parallel %q: want a positive number", f.Value.String())
			}
			gate.limit = n
		}
	}
	return flag.Set("test.parallel", strconv.Itoa(goParallel))
}

// needBrowser skips t when there is no browser (fails under CDPGUARD_E2E=1)
// and returns the browser's path.
func needBrowser(t *testing.T) string {
	t.Helper()
	p, err := chromePath()
	if err != nil {
		if strict() {
			t.Fatalf("CDPGUARD_E2E=1: %v", err)
		}
		t.Skipf("skipping: %v (set CDPGUARD_E2E=1 to fail instead)", err)
	}
	return p
}

// needNode is needBrowser for node and e2e/node_modules.
func needNode(t *testing.T) string {
	t.Helper()
	p, err := nodeSetup()
	if err != nil {
		if strict() {
			t.Fatalf("CDPGUARD_E2E=1: %v", err)
		}
		t.Skipf("skipping: %v (set CDPGUARD_E2E=1 to fail instead)", err)
	}
	return p
}
