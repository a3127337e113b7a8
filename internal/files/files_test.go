package files

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/relay"
)

func newDirs(t *testing.T, cfg Config) *Dirs {
	t.Helper()
	f, err := New(cfg, Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Contexts: func(string) []string { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func params(t *testing.T, v any) []byte {
	t.Helper()
	b, err := jsonv2.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeParams(t *testing.T, b []byte) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := jsonv2.Unmarshal(b, &m); err != nil {
		t.Fatalf("params %s: %v", b, err)
	}
	return m
}

func wantRefused(t *testing.T, v relay.Verdict, method string, parts ...string) {
	t.Helper()
	prefix := "cdpguard: " + method + " is refused: "
	if !strings.HasPrefix(v.Refuse, prefix) {
		t.Errorf("verdict %+v: want a refusal starting %q", v, prefix)
		return
	}
	for _, p := range parts {
		if !strings.Contains(v.Refuse, p) {
			t.Errorf("refusal %q lacks %q", v.Refuse, p)
		}
	}
}

func TestNewChecksDirs(t *testing.T) {
	root := t.TempDir()
	dl := filepath.Join(root, "a", "downloads")
	if _, err := New(Config{DownloadDir: dl}, Deps{}); err != nil {
		t.Fatalf("a missing download directory is created: %v", err)
	}
	if st, err := os.Stat(dl); err != nil || !st.IsDir() {
		t.Errorf("download directory not created: %v", err)
	}
	if _, err := New(Config{UploadDir: filepath.Join(root, "missing")}, Deps{}); !errors.Is(err, ErrDirs) {
		t.Errorf("missing upload directory: %v, want ErrDirs", err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{UploadDir: file}, Deps{}); !errors.Is(err, ErrDirs) || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("upload directory that is a file: %v", err)
	}
}

func TestDownloads(t *testing.T) {
	playwright := map[string]any{"behavior": "allowAndName", "browserContextId": "CTX", "downloadPath": "/tmp/agent-chosen", "eventsEnabled": true}
	t.Run("deny", func(t *testing.T) {
		f := newDirs(t, Config{})
		v := f.RewriteDownloads("alice", relay.Command{Method: "Browser.setDownloadBehavior", Params: params(t, playwright)})
		if v.Refuse != "" || v.Local != nil {
			t.Fatalf("Playwright's setup must be rewritten, not refused: %+v", v)
		}
		got := decodeParams(t, v.Params)
		if got["behavior"] != "deny" || got["downloadPath"] != nil || got["browserContextId"] != "CTX" || got["eventsEnabled"] != true {
			t.Errorf("rewritten params %v", got)
		}
	})
	t.Run("dir", func(t *testing.T) {
		dir := t.TempDir()
		f := newDirs(t, Config{DownloadDir: dir})
		for _, key := range []string{"alice", "", "../../etc", "a/b"} {
			v := f.RewriteDownloads(key, relay.Command{Method: "Browser.setDownloadBehavior", Params: params(t, playwright)})
			got := decodeParams(t, v.Params)
			p, _ := got["downloadPath"].(string)
			if got["behavior"] != "allowAndName" || filepath.Dir(p) != dir {
				t.Errorf("user %q: rewritten params %v, want allowAndName under %s", key, got, dir)
			}
			if st, err := os.Stat(p); err != nil || !st.IsDir() {
				t.Errorf("user %q: directory %s not created: %v", key, p, err)
			}
			if f.watched[p] != key {
				t.Errorf("user %q: directory %s is not under the cap", key, p)
			}
		}
		v := f.RewriteDownloads("alice", relay.Command{Method: "Page.setDownloadBehavior", Params: params(t, map[string]any{"behavior": "deny"})})
		if got := decodeParams(t, v.Params); got["behavior"] != "deny" {
			t.Errorf("deny became %v", got)
		}
		wantRefused(t, f.RewriteDownloads("alice", relay.Command{Method: "Page.setDownloadBehavior", Params: params(t, map[string]any{"behavior": 1})}), "Page.setDownloadBehavior", "not a string")
	})
	t.Run("defaults", func(t *testing.T) {
		p, err := newDirs(t, Config{}).Defaults("alice", "CTX")
		if err != nil || p["behavior"] != "deny" || p["browserContextId"] != "CTX" {
			t.Errorf("no dir: %v, %v", p, err)
		}
		dir := t.TempDir()
		p, err = newDirs(t, Config{DownloadDir: dir}).Defaults("", "CTX")
		if err != nil || p["behavior"] != "allowAndName" || p["downloadPath"] != filepath.Join(dir, "fallback") {
			t.Errorf("dir: %v, %v", p, err)
		}
	})
	names := map[string]bool{}
	for _, k := range []string{"", "alice", "Alice", "a/b", "a_b", "..", strings.Repeat("x", 500)} {
		n := userDirName(k)
		if names[n] || strings.ContainsAny(n, "/\\") || n == "." || n == ".." || len(n) > 80 {
			t.Errorf("userDirName(%q) = %q: duplicate or unsafe", k, n)
		}
		names[n] = true
	}
}

// recorder is a Caller that records the commands it is sent.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) Call(_ context.Context, _, method string, params any) (jsonv2.Value, error) {
	b, err := jsonv2.Marshal(params)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, method+" "+string(b))
	return jsonv2.Value("{}"), nil
}

func TestDownloadCap(t *testing.T) {
	dir := t.TempDir()
	f, err := New(Config{DownloadDir: dir, MaxBytes: 100}, Deps{
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Contexts: func(key string) []string {
			if key == "alice" {
				return []string{"C1", "C2"}
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, n int, age time.Duration) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, make([]byte, n), 0o600); err != nil {
			t.Fatal(err)
		}
		mt := time.Now().Add(-age)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	write("old", 60, time.Hour)
	write("new", 60, time.Minute)
	write("guid.crdownload", 10, 0)
	var b recorder
	f.enforce(t.Context(), &b, dir, "alice")
	left, total := measure(dir)
	if total > 100 || len(left) != 1 || left[0].name != "old" {
		t.Errorf("after enforce: %v (total %d), want only the oldest finished download", left, total)
	}
	// Map keys are marshalled in no fixed order (JSON v2): check each part.
	if len(b.calls) != 2 || !strings.HasPrefix(b.calls[0], "Browser.cancelDownload ") ||
		!strings.Contains(b.calls[0], `"browserContextId":"C1"`) || !strings.Contains(b.calls[0], `"guid":"guid"`) ||
		!strings.Contains(b.calls[1], `"browserContextId":"C2"`) {
		t.Errorf("the download in progress is cancelled in each of the user's contexts; calls %q", b.calls)
	}
	write("small", 10, 0)
	f.enforce(t.Context(), &b, dir, "nobody")
	if _, total := measure(dir); total != 70 {
		t.Errorf("under the cap nothing goes; total %d", total)
	}
	if len(b.calls) != 2 {
		t.Errorf("a user without contexts gets no cancel: %q", b.calls)
	}
}

// TestDownloadCapRun: Run enforces the cap on the directories it handed
// out, and ends with its context; without a download directory or a cap it
// returns at once.
func TestDownloadCapRun(t *testing.T) {
	var b recorder
	for _, cfg := range []Config{{}, {DownloadDir: t.TempDir(), MaxBytes: -1}} {
		newDirs(t, cfg).Run(t.Context(), &b) // returns: nothing to enforce
	}
	f := newDirs(t, Config{DownloadDir: t.TempDir(), MaxBytes: 10})
	p, err := f.Defaults("alice", "CTX")
	if err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(p["downloadPath"].(string), "big")
	if err := os.WriteFile(big, make([]byte, 20), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Run(ctx, &b)
	}()
	deadline := time.After(10 * time.Second)
	for {
		if _, err := os.Stat(big); errors.Is(err, os.ErrNotExist) {
			break
		}
		select {
		case <-deadline:
			t.Fatal("the download over the cap was not deleted in 10 s")
		case <-time.After(poll):
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end with its context")
	}
}

func TestUploads(t *testing.T) {
	root := t.TempDir()
	up := filepath.Join(root, "up")
	if err := os.Mkdir(up, 0o700); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(up, "ok.txt")
	if err := os.WriteFile(ok, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(up, "passwd")); err != nil {
		t.Fatal(err)
	}
	set := func(files ...string) relay.Command {
		return relay.Command{Method: "DOM.setFileInputFiles", Params: params(t, map[string]any{"files": files, "backendNodeId": 7})}
	}
	drag := func(files ...string) relay.Command {
		return relay.Command{Method: "Input.dispatchDragEvent", Params: params(t, map[string]any{"type": "drop", "x": 1, "y": 1, "data": map[string]any{"items": []any{}, "files": files, "dragOperationsMask": 1}})}
	}

	none := newDirs(t, Config{})
	wantRefused(t, none.CheckUpload(set(ok)), "DOM.setFileInputFiles", "no --upload-dir")
	wantRefused(t, none.CheckDrop(drag("/etc/passwd")), "Input.dispatchDragEvent")
	if v := none.CheckUpload(set()); v.Refuse != "" {
		t.Errorf("clearing a file input refused: %s", v.Refuse)
	}
	if v := none.CheckDrop(relay.Command{Method: "Input.dispatchDragEvent", Params: params(t, map[string]any{"type": "dragEnter", "x": 1, "y": 1})}); v.Refuse != "" {
		t.Errorf("drag without files refused: %s", v.Refuse)
	}

	f := newDirs(t, Config{UploadDir: up})
	v := f.CheckUpload(set(ok))
	if v.Refuse != "" {
		t.Fatalf("upload from the upload dir refused: %s", v.Refuse)
	}
	if got := decodeParams(t, v.Params); got["backendNodeId"] != float64(7) {
		t.Errorf("other params lost: %v", got)
	}
	wantRefused(t, f.CheckUpload(set(ok, "/etc/passwd")), "DOM.setFileInputFiles", "files[1]")
	wantRefused(t, f.CheckUpload(set(filepath.Join(up, "passwd"))), "DOM.setFileInputFiles", "files[0]")
	wantRefused(t, f.CheckUpload(set(filepath.Join(up, "..", "..", "etc", "passwd"))), "DOM.setFileInputFiles")
	wantRefused(t, f.CheckUpload(set("ok.txt")), "DOM.setFileInputFiles", "files[0]")
	wantRefused(t, f.CheckDrop(drag(filepath.Join(up, "passwd"))), "Input.dispatchDragEvent")
	wantRefused(t, f.CheckUpload(relay.Command{Method: "DOM.setFileInputFiles", Params: params(t, map[string]any{"files": "x"})}), "DOM.setFileInputFiles", "not a list")
	v = f.CheckDrop(drag(ok))
	if v.Refuse != "" {
		t.Fatalf("drop from the upload dir refused: %s", v.Refuse)
	}
	data, _ := decodeParams(t, v.Params)["data"].(map[string]any)
	if files, _ := data["files"].([]any); len(files) != 1 || data["dragOperationsMask"] != float64(1) {
		t.Errorf("rewritten drag data %v", data)
	}
}

// TestUploadErrorsIdentical (#20 item 5): every path that is not a file
// inside the upload directory gets the same answer, whether it exists or
// not, so an agent cannot probe the guard host's files: plain paths, "..",
// links in the upload directory pointing out, links to missing targets,
// relative paths; by drop as by file input.
func TestUploadErrorsIdentical(t *testing.T) {
	root := t.TempDir()
	up := filepath.Join(root, "up")
	outside := filepath.Join(root, "secret")
	for _, d := range []string{up, outside} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	exists := filepath.Join(outside, "exists.txt")
	if err := os.WriteFile(exists, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(outside, "missing.txt")
	if err := os.Symlink(exists, filepath.Join(up, "to-exists")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(missing, filepath.Join(up, "to-missing")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(up, "dir")); err != nil {
		t.Fatal(err)
	}
	f := newDirs(t, Config{UploadDir: up})
	paths := []string{
		exists, missing,
		outside, filepath.Join(outside, "nodir", "x"),
		filepath.Join(up, "..", "secret", "exists.txt"), filepath.Join(up, "..", "secret", "missing.txt"),
		up + "/../secret/exists.txt", up + "/../secret/missing.txt",
		filepath.Join(up, "to-exists"), filepath.Join(up, "to-missing"),
		filepath.Join(up, "dir", "exists.txt"), filepath.Join(up, "dir", "missing.txt"),
		"/etc/passwd", "/etc/no-such-file-here", "/proc/self/environ",
		"secret/exists.txt", "../secret/missing.txt", "",
	}
	for _, drop := range []bool{false, true} {
		var first string
		for _, p := range paths {
			var v relay.Verdict
			if drop {
				v = f.CheckDrop(relay.Command{Method: "Input.dispatchDragEvent", Params: params(t, map[string]any{"type": "drop", "data": map[string]any{"files": []string{p}}})})
			} else {
				v = f.CheckUpload(relay.Command{Method: "DOM.setFileInputFiles", Params: params(t, map[string]any{"files": []string{p}, "backendNodeId": 7})})
			}
			if v.Refuse == "" {
				t.Fatalf("%q: not refused", p)
			}
			if first == "" {
				first = v.Refuse
				t.Logf("the one answer: %s", first)
			}
			if v.Refuse != first {
				t.Errorf("%q: answer %q differs from %q", p, v.Refuse, first)
			}
		}
	}
}
