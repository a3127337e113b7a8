package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// taskServer is one MCP server the scripted model talks to, through the
// same Go SDK client either way: @playwright/mcp over stdio, cdpguard's
// /mcp over streamable HTTP.
type taskServer struct {
	name string
	pw   bool // @playwright/mcp: its tools return a snapshot after actions
	s    *mcp.ClientSession
	// dirs are where a download could land: the server's output directory
	// and its browser's home.
	dirs []string
	stop func()
}

// startPlaywrightMCP starts @playwright/mcp as a user would for one model:
// it launches the browser itself (headless, isolated profile), restricted
// to the test site's origin with --allowed-origins; *.test maps to
// loopback through Chromium's host resolver rules (config file).
func startPlaywrightMCP(ctx context.Context, root, chrome, allowedOrigin string) (*taskServer, error) {
	cli := filepath.Join(root, "e2e", "node_modules", "@playwright", "mcp", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		return nil, fmt.Errorf("@playwright/mcp not installed in e2e/node_modules (cd e2e && npm ci --ignore-scripts): %w", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	dir, err := os.MkdirTemp("", "bench-tasks-pw-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	out, home := filepath.Join(dir, "out"), filepath.Join(dir, "home")
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"browser":{"launchOptions":{"args":["--host-resolver-rules=MAP *.test 127.0.0.1"]}}}`), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("config: %w", err)
	}
	for _, d := range []string{out, home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("temp dir: %w", err)
		}
	}
	cmd := exec.Command(node, cli, "--config", cfg, "--executable-path", chrome, "--headless", "--no-sandbox", "--isolated",
		"--allowed-origins", allowedOrigin, "--output-dir", out)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	errs := &tail{max: 8 << 10}
	cmd.Stderr = errs
	cctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	s, err := mcp.NewClient(&mcp.Implementation{Name: "bench-tasks", Version: "1"}, nil).Connect(cctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: closeWait}, nil)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start @playwright/mcp: %w: %s", err, errs.String())
	}
	stop := func() {
		_ = s.Close() // closes stdin, then SIGTERM, then SIGKILL after TerminateDuration
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // its browser
		}
		_ = os.RemoveAll(dir)
	}
	return &taskServer{name: "@playwright/mcp", pw: true, s: s, dirs: []string{out, home}, stop: stop}, nil
}

// startGuardMCP runs the cdpguard binary (no download directory: downloads
// are refused) with its browser's home in a temp directory, and connects
// one MCP user.
func startGuardMCP(ctx context.Context, bin, chrome string) (*taskServer, error) {
	home, err := os.MkdirTemp("", "bench-tasks-guard-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	b, err := startGuardBinaryEnv(ctx, []string{"HOME=" + home}, bin, chrome)
	if err != nil {
		_ = os.RemoveAll(home)
		return nil, err
	}
	s, err := mcpSession(ctx, b.url, "bench-tasks")
	if err != nil {
		b.stop()
		_ = os.RemoveAll(home)
		return nil, fmt.Errorf("connect /mcp: %w", err)
	}
	stop := func() {
		_ = s.Close()
		b.stop()
		_ = os.RemoveAll(home)
	}
	return &taskServer{name: "cdpguard /mcp", s: s, dirs: []string{home}, stop: stop}, nil
}

// downloaded lists the files named like the task's report under the
// server's directories.
func (t *taskServer) downloaded() []string {
	var got []string
	for _, d := range t.dirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() && strings.Contains(e.Name(), "readership") {
				got = append(got, p)
			}
			return nil
		})
	}
	return got
}

// taskRun is one task on one server: what the model was given and how
// many calls it took.
type taskRun struct {
	ctx        context.Context
	srv        *taskServer
	calls      int
	chars      int // text of every tool result, in characters (runes)
	imageChars int // images' base64 length, counted apart
	texts      []string
	log        func(format string, args ...any)
}

// call runs one tool as the model would and returns its text. A tool error
// is a result the model reads (isError true); only a transport failure is
// an error.
func (r *taskRun) call(name string, args map[string]any) (string, bool, error) {
	ctx, cancel := context.WithTimeout(r.ctx, loadTimeout)
	defer cancel()
	r.calls++
	start := time.Now()
	res, err := r.srv.s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	took := time.Since(start)
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			if b.Len() > 0 {
				b.WriteString("\n") // content items are apart for the model too
			}
			b.WriteString(c.Text)
		case *mcp.ImageContent:
			r.imageChars += base64.StdEncoding.EncodedLen(len(c.Data))
		}
	}
	text := b.String()
	r.chars += utf8.RuneCountInString(text)
	r.texts = append(r.texts, text)
	if r.log != nil {
		r.log("    %s %s %v -> %d chars in %.0f ms, error %v: %q", r.srv.name, name, args, utf8.RuneCountInString(text), ms(took), res.IsError, text)
	}
	return text, res.IsError, nil
}

// must is call for a step the task cannot go on without.
func (r *taskRun) must(name string, args map[string]any) (string, error) {
	text, isErr, err := r.call(name, args)
	if err != nil {
		return "", err
	}
	if isErr {
		return text, fmt.Errorf("%s: tool error: %.200s", name, text)
	}
	return text, nil
}

// seen reports whether every part is in one result the model was given.
func (r *taskRun) seen(parts ...string) bool {
	for _, t := range r.texts {
		if containsAll(t, parts...) {
			return true
		}
	}
	return false
}

// seenNear reports whether a result holds first and, within the next 300
// characters, then: a table row's cell read with its row, whether the row
// is one line (/mcp's "Lyon | France | 522,250") or a cell per line
// (@playwright/mcp's outline).
func (r *taskRun) seenNear(first, then string) bool {
	for _, t := range r.texts {
		for i := 0; ; {
			k := strings.Index(t[i:], first)
			if k < 0 {
				break
			}
			i += k + len(first)
			if strings.Contains(t[i:min(len(t), i+300)], then) {
				return true
			}
		}
	}
	return false
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// refLineRE matches an outline line "- role "name" ... [ref=eN]" (YAML
// may quote the whole line: "- 'link "a: b" [ref=f1e2]':").
var refLineRE = regexp.MustCompile(`-\s+'?(\w+)\s+"([^"]*)"[^\n]*?\[ref=([a-z0-9]+)\]`)

// ref finds the ref of the element with this role whose name contains
// name, in the newest result that has one, as a model reads it off the
// page's outline.
func (r *taskRun) ref(role, name string) (string, error) {
	for i := len(r.texts) - 1; i >= 0; i-- {
		for _, m := range refLineRE.FindAllStringSubmatch(r.texts[i], -1) {
			if m[1] == role && strings.Contains(m[2], name) {
				return m[3], nil
			}
		}
	}
	return "", fmt.Errorf("no %s %q with a ref in what the model was given", role, name)
}

// click clicks the element with this role and name, by its ref.
func (r *taskRun) click(role, name string) (string, bool, error) {
	ref, err := r.ref(role, name)
	if err != nil {
		return "", false, err
	}
	return r.call("browser_click", map[string]any{"target": ref, "element": name})
}

// field is a browser_fill_form field, found by role and name.
func (r *taskRun) field(role, name, typ, value string) (map[string]any, error) {
	ref, err := r.ref(role, name)
	if err != nil {
		return nil, err
	}
	return map[string]any{"target": ref, "name": name, "type": typ, "value": value}, nil
}

// fill fills fields with browser_fill_form; each is role, name, type, value.
func (r *taskRun) fill(fields ...[4]string) error {
	var fs []map[string]any
	for _, f := range fields {
		m, err := r.field(f[0], f[1], f[2], f[3])
		if err != nil {
			return err
		}
		fs = append(fs, m)
	}
	_, err := r.must("browser_fill_form", map[string]any{"fields": fs})
	return err
}

// wall is a task's time, in ms.
func wall(start time.Time) float64 { return ms(time.Since(start)) }
