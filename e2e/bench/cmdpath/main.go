// Command cmdpath lists the files of this module that run while one agent
// command crosses the guard: issue 36's "one agent command's path crosses
// at most N files", measured instead of counted by eye. It runs cdpguard
// in this process around Debian's Chromium, opens a user's page, and then,
// for each of a few commands, clears the coverage counters, sends the
// command, waits for its reply and writes the counters. A file is on the
// path when a statement of it ran in every one of the runs (a timer or a
// background goroutine that happened to run in one window is not).
//
// Build it with coverage and run it inside a private network namespace
// (scripts/cmdpath.sh does both):
//
//	go build -cover -covermode=atomic -coverpkg=github.com/cdpguard/cdpguard/... -o /tmp/cmdpath ./e2e/bench/cmdpath
//	/tmp/cmdpath -method Page.navigate -params '{"url":"$PAGE"}'
package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/coverage"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// module is the prefix of this module's files in coverage profiles.
const module = "github.com/cdpguard/cdpguard/"

func main() {
	chrome := flag.String("chrome", "/usr/bin/chromium", "Chromium binary")
	method := flag.String("method", "Runtime.evaluate", "the agent command measured, sent on the page's session")
	params := flag.String("params", `{"expression":"1+1","returnByValue":true}`, "its params as JSON; $PAGE is the page's URL (-method Page.navigate -params '{\"url\":\"$PAGE\"}')")
	runs := flag.Int("runs", 5, "commands measured; a file counts when it ran in all of them")
	lines := flag.Bool("lines", false, "also list, under each file, the statements (line ranges) that ran in all runs: why the file is on the path")
	flag.Parse()
	if err := run(*chrome, *method, *params, *runs, *lines); err != nil {
		fmt.Fprintln(os.Stderr, "cmdpath:", err)
		os.Exit(1)
	}
}

func run(chrome, method, paramsJSON string, runs int, lines bool) error {
	if err := coverage.ClearCounters(); err != nil {
		return fmt.Errorf("not built with -cover -covermode=atomic: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "<!doctype html><title>cmdpath</title><p>one page")
	})}
	go func() { _ = srv.Serve(l) }()
	defer func() { _ = srv.Close() }()
	page := fmt.Sprintf("http://site.test:%d/", l.Addr().(*net.TCPAddr).Port)

	g, err := cdpguard.Launch(ctx, cdpguard.Config{
		Allow:      []string{"site.test"},
		HostMap:    []string{"*.test=127.0.0.1"},
		ChromePath: chrome,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return fmt.Errorf("cdpguard.Launch: %w", err)
	}
	defer func() { _ = g.Close() }()
	h := http.Header{"X-Librechat-User": []string{"cmdpath"}}
	ws, err := cdptest.BrowserURL(ctx, g.URL(), h)
	if err != nil {
		return err
	}
	c, err := cdptest.Dial(ctx, ws, cdptest.Options{Header: h})
	if err != nil {
		return err
	}
	defer c.Close()
	session, err := openPage(ctx, c, page)
	if err != nil {
		return err
	}
	var params jsonv2.Value
	if err := jsonv2.Unmarshal([]byte(strings.ReplaceAll(paramsJSON, "$PAGE", page)), &params); err != nil {
		return fmt.Errorf("-params: %w", err)
	}
	for range 3 { // warm: first calls set up what later ones reuse
		if _, err := c.Call(ctx, session, method, params); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
	}
	time.Sleep(time.Second) // the page's load work ends before the measured windows

	tmp, err := os.MkdirTemp("", "cmdpath-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	var every map[string]bool // statement blocks, "file:start.col,end.col"
	union := map[string]bool{}
	for i := range runs {
		dir := filepath.Join(tmp, fmt.Sprint(i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		if err := coverage.WriteMetaDir(dir); err != nil {
			return err
		}
		if err := coverage.ClearCounters(); err != nil {
			return err
		}
		_, callErr := c.Call(ctx, session, method, params)
		if err := coverage.WriteCountersDir(dir); err != nil {
			return err
		}
		if callErr != nil {
			return fmt.Errorf("%s: %w", method, callErr)
		}
		blocks, err := ranBlocks(dir)
		if err != nil {
			return err
		}
		for b := range blocks {
			union[b] = true
		}
		if every == nil {
			every = blocks
			continue
		}
		for b := range every {
			if !blocks[b] {
				delete(every, b)
			}
		}
	}
	all, anyRun := filesOf(every), filesOf(union)
	list := slices.Sorted(maps.Keys(all))
	fmt.Printf("%s: %d files of this module ran in all %d runs (%d in any):\n", method, len(list), runs, len(anyRun))
	for _, f := range list {
		fmt.Println("  " + f)
		if lines {
			slices.SortFunc(all[f], compareBlocks)
			fmt.Println("      " + strings.Join(all[f], " "))
		}
	}
	for _, f := range slices.Sorted(maps.Keys(anyRun)) {
		if all[f] == nil {
			fmt.Println("  (in some runs only) " + f)
		}
	}
	return nil
}

// filesOf groups statement blocks ("file:start.col,end.col") by file.
func filesOf(blocks map[string]bool) map[string][]string {
	files := map[string][]string{}
	for b := range blocks {
		f, r, _ := strings.Cut(b, ":")
		files[f] = append(files[f], r)
	}
	return files
}

// compareBlocks orders blocks "start.col,end.col" by their first line.
func compareBlocks(a, b string) int {
	line := func(s string) int {
		n, _ := strconv.Atoi(s[:strings.IndexByte(s, '.')])
		return n
	}
	return cmp.Compare(line(a), line(b))
}

// openPage creates a page in the user's context, attaches to it and
// loads url, returning the session id.
func openPage(ctx context.Context, c *cdptest.Client, url string) (string, error) {
	res, err := c.Call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		return "", fmt.Errorf("createTarget: %w", err)
	}
	var ct struct {
		TargetID string `json:"targetId"`
	}
	if err := jsonv2.Unmarshal(res, &ct); err != nil {
		return "", err
	}
	res, err = c.Call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": ct.TargetID, "flatten": true})
	if err != nil {
		return "", fmt.Errorf("attachToTarget: %w", err)
	}
	var at struct {
		SessionID string `json:"sessionId"`
	}
	if err := jsonv2.Unmarshal(res, &at); err != nil {
		return "", err
	}
	loaded, stop := c.Subscribe(at.SessionID, "Page.loadEventFired")
	defer stop()
	for _, m := range []string{"Page.enable", "Runtime.enable"} {
		if _, err := c.Call(ctx, at.SessionID, m, nil); err != nil {
			return "", fmt.Errorf("%s: %w", m, err)
		}
	}
	if _, err := c.Call(ctx, at.SessionID, "Page.navigate", map[string]any{"url": url}); err != nil {
		return "", fmt.Errorf("navigate: %w", err)
	}
	if _, err := c.Wait(ctx, loaded, "load"); err != nil {
		return "", err
	}
	return at.SessionID, nil
}

// ranBlocks reads the coverage data in dir (go tool covdata) and returns
// the guard's statement blocks (this module's files, outside e2e/) that
// ran, as "file:start.col,end.col".
func ranBlocks(dir string) (map[string]bool, error) {
	prof := filepath.Join(dir, "profile.txt")
	out, err := exec.Command("go", "tool", "covdata", "textfmt", "-i="+dir, "-o="+prof).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go tool covdata: %w: %s", err, out)
	}
	f, err := os.Open(prof)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	files := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, module) || strings.HasPrefix(name, module+"e2e/") || strings.HasSuffix(line, " 0") {
			continue // other modules, the measuring client, statements that did not run
		}
		span, _, _ := strings.Cut(rest, " ")
		files[strings.TrimPrefix(name, module)+":"+span] = true
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, errors.New("no statement of this module ran: was it built with -coverpkg?")
	}
	return files, nil
}
