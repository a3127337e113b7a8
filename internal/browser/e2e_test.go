//go:build linux

package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// launchTimeout bounds a browser start-up in tests (race builds, 2 cores).
const launchTimeout = 60 * time.Second

// chromeOrSkip returns the Chromium to test with. Without one the test is
// skipped, unless CDPGUARD_E2E=1 demands it.
func chromeOrSkip(t *testing.T) string {
	t.Helper()
	path, err := findBinary(os.Getenv("CHROME_PATH"))
	if err != nil {
		if os.Getenv("CDPGUARD_E2E") == "1" {
			t.Fatalf("CDPGUARD_E2E=1 but no chromium: %v", err)
		}
		t.Skipf("skipping browser test: %v (set CDPGUARD_E2E=1 to make this a failure)", err)
	}
	return path
}

// launch starts a headless Chromium and closes it at the end of the test.
func launch(t *testing.T, opts LaunchOptions) *Process {
	t.Helper()
	opts.Path = chromeOrSkip(t)
	ctx, cancel := context.WithTimeout(context.Background(), launchTimeout)
	defer cancel()
	p, err := Launch(ctx, opts)
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// cdpReply is the part of a CDP reply the tests read.
type cdpReply struct {
	ID     int64        `json:"id"`
	Result jsonv2.Value `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// call sends one command and returns its result, skipping events; the read
// is bounded by closing conn after a timeout.
func call(t *testing.T, conn Conn, id int64, sessionID, method string, params any, result any) {
	t.Helper()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if sessionID != "" {
		msg["sessionId"] = sessionID
	}
	b, err := jsonv2.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.WriteMessage(b); err != nil {
		t.Fatalf("%s: write: %v", method, err)
	}
	timer := time.AfterFunc(60*time.Second, func() { _ = conn.Close() })
	defer timer.Stop()
	for {
		raw, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("%s: read: %v", method, err)
		}
		var r cdpReply
		if err := jsonv2.Unmarshal(raw, &r); err != nil {
			t.Fatalf("%s: decode %.200s: %v", method, raw, err)
		}
		if r.ID != id {
			continue
		}
		if r.Error != nil {
			t.Fatalf("%s: %s", method, r.Error.Message)
		}
		if result != nil {
			if err := jsonv2.Unmarshal(r.Result, result); err != nil {
				t.Fatalf("%s: decode result: %v", method, err)
			}
		}
		return
	}
}

// openPage creates a target, attaches to it flat and returns the session id.
func openPage(t *testing.T, conn Conn) string {
	t.Helper()
	var created struct {
		TargetID string `json:"targetId"`
	}
	call(t, conn, 100, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &created)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	call(t, conn, 101, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached)
	return attached.SessionID
}

// bigReply and bigCommand are the sizes checkBigMessages sends and reads:
// each spans several pipe read buffers (pipeReadBuffer, so the pipe takes
// its bufio.ErrBufferFull path more than once) and is about a hundred
// times a websocket's default read limit (32 KiB, so Dial's SetReadLimit
// is what lets it through). A larger message runs the same code; the 12
// and 11 MB used before cost these two tests about 9 more CPU-seconds
// under -race (docs/decisions/2026-12-07-ci-cpu.md).
const (
	bigReply   = 3*pipeReadBuffer + 12345
	bigCommand = 2*pipeReadBuffer + 6789
)

// checkBigMessages sends a command of bigCommand bytes and reads a reply of
// bigReply bytes on a page.
func checkBigMessages(t *testing.T, conn Conn) {
	t.Helper()
	session := openPage(t, conn)
	type evalResult struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
	}
	var out evalResult
	call(t, conn, 200, session, "Runtime.evaluate",
		map[string]any{"expression": fmt.Sprintf("'x'.repeat(%d)", bigReply), "returnByValue": true}, &out)
	if s, _ := out.Result.Value.(string); len(s) != bigReply || strings.Trim(s, "x") != "" {
		t.Fatalf("%d-byte reply: got %d bytes", bigReply, len(s))
	}
	var in evalResult
	call(t, conn, 201, session, "Runtime.evaluate",
		map[string]any{"expression": "'" + strings.Repeat("y", bigCommand) + "'.length", "returnByValue": true}, &in)
	if n, _ := in.Result.Value.(float64); n != bigCommand {
		t.Fatalf("%d-byte command: page saw length %v", bigCommand, in.Result.Value)
	}
}

// treeOf lists live processes of a Chrome: those in its process group and
// those whose command line names its user-data-dir.
func treeOf(pgid int, userDataDir string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, group, err := procStat(pid)
		if err != nil || state == 'Z' || state == 'X' {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if group == pgid || strings.Contains(string(cmdline), userDataDir) {
			out = append(out, fmt.Sprintf("%d(pgid %d): %.80s", pid, group, strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return out
}

// waitTreeGone polls until treeOf is empty, at most limit.
func waitTreeGone(pgid int, userDataDir string, limit time.Duration) []string {
	deadline := time.Now().Add(limit)
	for {
		left := treeOf(pgid, userDataDir)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startDebugPortChrome runs Chromium with --remote-debugging-port=0, as a
// user would for `cdpguard attach`, and returns its http and ws URLs.
func startDebugPortChrome(t *testing.T) (httpURL, wsURL string) {
	t.Helper()
	path := chromeOrSkip(t)
	dir := t.TempDir()
	args := MergeFlags([]string{"--remote-debugging-port=0", "--user-data-dir=" + dir,
		"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"about:blank"})
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		killGroup(cmd)
		_ = cmd.Wait()
		_ = waitGroupGone(cmd, 5*time.Second)
	})
	deadline := time.Now().Add(launchTimeout)
	for {
		b, err := os.ReadFile(dir + "/DevToolsActivePort")
		if lines := strings.Split(string(b), "\n"); err == nil && len(lines) >= 2 && lines[1] != "" {
			return "http://127.0.0.1:" + lines[0], "ws://127.0.0.1:" + lines[0] + lines[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no DevToolsActivePort after %v", launchTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
