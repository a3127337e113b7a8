package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// fwUser is the session header value of the firewall client: it has a
// slash and dots, so its download directory name must be cleaned.
const fwUser = "fw/../user"

// Upload markers: the content of the file inside --upload-dir and of the
// one outside it. The form server must never see the second.
const (
	insideMarker  = "upload-inside-marker"
	outsideMarker = "upload-outside-secret"
)

// fileServer is an allowed host (allowed.test on its own port) with an
// upload form, a small and a big download, and a record of uploads.
type fileServer struct {
	origin string
	mu     sync.Mutex
	posts  int
	bodies []string
}

const (
	smallDownload = "small-download-content\n"
	bigDownload   = 4 << 20 // bytes, sent slowly so the cap sees it in progress
)

func startFileServer(t *testing.T) *fileServer {
	t.Helper()
	s := &fileServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/form.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>form</title>
<form id=f method=post enctype=multipart/form-data action=/upload><input type=file name=file id=file><button id=go>send</button></form>
<a id=small href=/small>small</a> <a id=big href=/big>big</a>`)
	})
	mux.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		s.mu.Lock()
		s.posts++
		s.bodies = append(s.bodies, string(b))
		s.mu.Unlock()
		fmt.Fprint(w, "<!doctype html><title>uploaded</title>uploaded")
	})
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="small.txt"`)
		fmt.Fprint(w, smallDownload)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="big.bin"`)
		w.Header().Set("Content-Length", strconv.Itoa(bigDownload))
		chunk := bytes.Repeat([]byte("B"), 128<<10)
		for sent := 0; sent < bigDownload; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(40 * time.Millisecond):
			}
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
	})
	s.origin = "http://" + testhosts.AllowedName + ":" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	return s
}

func (s *fileServer) uploads() (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.posts, strings.Join(s.bodies, "\n----\n")
}

// firewallSteps are the steps firewall.mjs must report.
var firewallSteps = []string{"connect", "refusedRows", "passingRows", "gotoFile", "gotoChrome", "uploadOutside", "uploadInside", "routeContinueForbidden", "routeOthers", "downloadSmall", "downloadBig"}

// TestFirewallClients drives every firewall row through Playwright's
// newCDPSession / newBrowserCDPSession: once with no download or upload
// directory (downloads denied, uploads refused) and once with both.
func TestFirewallClients(t *testing.T) {
	parallelSuite(t) // own guard, browser and test hosts: overlaps the other suites' waits (CI wall time)
	needBrowser(t)
	// Each mode has its own guard, browser, hosts and directories.
	runConcurrently(t, []string{"deny", "dirs"}, func(t *testing.T, mode string) {
		h := testhosts.Start(t)
		fs := startFileServer(t)
		root := t.TempDir()
		up, dl, agentDL := filepath.Join(root, "upload"), filepath.Join(root, "downloads"), filepath.Join(root, "agent-chosen")
		for _, d := range []string{up, agentDL} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		inside, outside := filepath.Join(up, "inside.txt"), filepath.Join(root, "outside.txt")
		mustWrite(t, inside, insideMarker)
		mustWrite(t, outside, outsideMarker)
		if err := os.Symlink(outside, filepath.Join(up, "link-out.txt")); err != nil {
			t.Fatal(err)
		}
		const capBytes = 1 << 20
		g := userGuard(t, func(c *cdpguard.Config) {
			if mode == "dirs" {
				c.UploadDir, c.DownloadDir, c.DownloadMaxBytes = up, dl, capBytes
			}
		})
		runNodeSteps(t, g.URL(), h, []string{
			"FW_MODE=" + mode,
			"FW_USER=" + fwUser,
			"FW_ORIGIN=" + fs.origin,
			"FW_UPLOAD_INSIDE=" + inside,
			"FW_UPLOAD_OUTSIDE=" + outside,
			"FW_UPLOAD_LINK=" + filepath.Join(up, "link-out.txt"),
			"FW_AGENT_DOWNLOADS=" + agentDL,
			"FW_FORBIDDEN=" + h.Forbidden.Origin() + testhosts.HitPath("firewall-load"),
		}, firewallSteps, "firewall.mjs")

		n, bodies := fs.uploads()
		if strings.Contains(bodies, outsideMarker) {
			t.Errorf("the form server received the file from outside the upload directory (%d posts)", n)
		}
		if got := strings.Contains(bodies, insideMarker); got != (mode == "dirs") {
			t.Errorf("form server got the upload-dir file = %v, want %v (%d posts)", got, mode == "dirs", n)
		}
		if h.Forbidden.Total() > 0 || h.Forbidden.Conns() > 0 {
			t.Errorf("forbidden host reached: %v", h.Forbidden.Log())
		}
		if entries, _ := os.ReadDir(agentDL); len(entries) > 0 {
			t.Errorf("a download went to the agent's own downloadPath: %v", entries)
		}
		if mode == "deny" {
			if _, err := os.Stat(dl); err == nil {
				t.Errorf("download dir %s exists without --download-dir", dl)
			}
			return
		}
		checkDownloadDir(t, dl, capBytes)
	})
}

// checkDownloadDir checks that the user's directory holds the small
// download and nothing over the cap, and that no other directory exists.
func checkDownloadDir(t *testing.T, dl string, capBytes int64) {
	t.Helper()
	dirs, err := os.ReadDir(dl)
	if err != nil || len(dirs) != 1 || !dirs[0].IsDir() {
		t.Fatalf("download dir %s: %v, %v; want one user directory", dl, dirs, err)
	}
	name := dirs[0].Name()
	if strings.ContainsAny(name, "/.") && !strings.HasPrefix(name, "user-") {
		t.Errorf("user directory name %q is not cleaned", name)
	}
	userDir := filepath.Join(dl, name)
	var total int64
	var small bool
	deadline := time.Now().Add(5 * time.Second) // the cap runs every 100 ms
	for {
		entries, _ := os.ReadDir(userDir)
		total, small = 0, false
		var names []string
		for _, e := range entries {
			info, err := e.Info()
			if err != nil {
				continue
			}
			total += info.Size()
			names = append(names, fmt.Sprintf("%s:%d", e.Name(), info.Size()))
			if b, _ := os.ReadFile(filepath.Join(userDir, e.Name())); string(b) == smallDownload {
				small = true
			}
		}
		if total <= capBytes && small {
			t.Logf("user directory %s: %v", name, names)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("user directory %s after 5s: %v (total %d, cap %d, small download present %v)", name, names, total, capBytes, small)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
