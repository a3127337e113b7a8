package cdpguard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// downloadPoll is how often the per-user download directories are measured.
// A download that outruns the cap within one interval is deleted once it
// is seen.
const downloadPoll = 100 * time.Millisecond

// partialSuffix is the name Chrome gives a download in progress.
const partialSuffix = ".crdownload"

// ErrFileDirs is wrapped by errors about --download-dir and --upload-dir.
var ErrFileDirs = errors.New("cdpguard: bad file directory")

// checkFileDirs validates the download and upload directories of cfg: the
// download directory is created if missing, the upload directory must exist.
// Guard setup calls it so that a typo stops startup instead of refusing
// every upload later.
func checkFileDirs(cfg Config) error {
	if cfg.DownloadDir != "" {
		if err := os.MkdirAll(cfg.DownloadDir, 0o700); err != nil {
			return fmt.Errorf("%w: download directory: %w", ErrFileDirs, err)
		}
	}
	if cfg.UploadDir != "" {
		st, err := os.Stat(cfg.UploadDir)
		if err != nil {
			return fmt.Errorf("%w: upload directory: %w", ErrFileDirs, err)
		}
		if !st.IsDir() {
			return fmt.Errorf("%w: upload directory %s is not a directory", ErrFileDirs, cfg.UploadDir)
		}
	}
	return nil
}

// userDirName is the name of a user's download directory: the key with
// every byte outside [A-Za-z0-9_-] replaced, shortened, plus a hash of the
// whole key so that keys which clean to the same name stay apart. The
// fallback user (no session header) gets "fallback", which no key maps to.
func userDirName(key string) string {
	if key == "" {
		return "fallback"
	}
	var b strings.Builder
	for i := 0; i < len(key) && b.Len() < 40; i++ {
		c := key[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(key))
	return "user-" + b.String() + "-" + hex.EncodeToString(sum[:6])
}

// fileGuard enforces the per-user download cap. It keeps the user
// directories downloads were pointed at and measures them while the guard
// runs: its one goroutine is started by the guard's start-up (start) and
// ends with the guard, whoever calls watch.
type fileGuard struct {
	g   *Guard
	max int64

	mu   sync.Mutex
	dirs map[string]string // user directory → user key
}

// files returns the guard's fileGuard.
func (g *Guard) files() *fileGuard { return g.fg }

// newFileGuard returns the download-cap enforcer of g.
func newFileGuard(g *Guard) *fileGuard {
	max := g.cfg.DownloadMaxBytes
	if max == 0 {
		max = DefaultDownloadMaxBytes
	}
	return &fileGuard{g: g, max: max, dirs: map[string]string{}}
}

// userDownloadDir returns (creating it) the user's download directory.
func (g *Guard) userDownloadDir(key string) (string, error) {
	dir := filepath.Join(g.cfg.DownloadDir, userDirName(key))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("%w: %w", ErrFileDirs, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrFileDirs, err)
	}
	return abs, nil
}

// rewriteDownloads rewrites Browser/Page.setDownloadBehavior: without a
// download directory every behavior becomes "deny" (Playwright's own
// connectOverCDP setup still gets success); with one, any behavior but
// "deny" becomes "allowAndName" into the user's directory, named by
// download guid so that the cap can cancel downloads in progress. The
// agent's downloadPath is never used.
func (g *Guard) rewriteDownloads(ctx context.Context, st *agentState, cmd relay.Command) relay.Verdict {
	in := map[string]jsonv2.Value{}
	if err := unmarshalParams(cmd.Params, &in); err != nil {
		return refusal(cmd.Method, "unreadable params: "+err.Error())
	}
	var behavior string
	if raw, ok := in["behavior"]; ok {
		if err := jsonv2.Unmarshal(raw, &behavior); err != nil {
			return refusal(cmd.Method, "behavior is not a string")
		}
	}
	out := maps.Clone(in)
	delete(out, "downloadPath")
	switch {
	case behavior == "deny" || g.cfg.DownloadDir == "":
		out["behavior"] = jsonv2.Value(`"deny"`)
		if behavior != "deny" {
			g.log.Debug("downloads denied (no --download-dir): clients see each download end as canceled", "user", st.user.Key, "asked", behavior)
		}
	default:
		dir, err := g.userDownloadDir(st.user.Key)
		if err != nil {
			return refusal(cmd.Method, err.Error())
		}
		p, err := jsonv2.Marshal(dir)
		if err != nil {
			return refusal(cmd.Method, err.Error())
		}
		out["behavior"] = jsonv2.Value(`"allowAndName"`)
		out["downloadPath"] = p
		if _, asked := in["downloadPath"]; asked {
			// Playwright's download.path() names the directory it asked for,
			// which Chrome never writes to (docs/decisions/2026-12-01-dialogs.md).
			g.log.Info("downloads go to the user's directory, not the one the agent asked for; Browser.downloadProgress filePath names each file", "user", st.user.Key, "dir", dir)
		}
		g.files().watch(dir, st.user.Key)
	}
	params, err := jsonv2.Marshal(out)
	if err != nil {
		return refusal(cmd.Method, err.Error())
	}
	return relay.Verdict{Params: params}
}

// watch adds dir of the user key to the directories the cap measures. It
// only records: any goroutine may call it.
func (f *fileGuard) watch(dir, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dirs[dir] = key
}

// start runs the cap until the guard ends. The guard's start-up calls it
// once, when there is a download directory with a cap to enforce.
func (f *fileGuard) start() {
	if f.g.cfg.DownloadDir == "" || f.max < 0 {
		return
	}
	f.g.wg.Add(1)
	go func() { // the cap: ends with the guard
		defer f.g.wg.Done()
		f.run(f.g.ctx)
	}()
}

func (f *fileGuard) run(ctx context.Context) {
	t := time.NewTicker(downloadPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.mu.Lock()
		dirs := maps.Clone(f.dirs)
		f.mu.Unlock()
		for dir, key := range dirs {
			f.enforce(ctx, dir, key)
		}
	}
}

type dlFile struct {
	name string
	size int64
	mod  time.Time
}

// enforce keeps dir within the cap: when the files in it add up to more,
// downloads in progress are cancelled (Chrome removes their partial files)
// and then the newest finished downloads are deleted until it fits.
func (f *fileGuard) enforce(ctx context.Context, dir, key string) {
	if f.max < 0 {
		return
	}
	files, total := measure(dir)
	if total <= f.max {
		return
	}
	var done []dlFile
	var doneTotal int64
	for _, e := range files {
		guid, partial := strings.CutSuffix(e.name, partialSuffix)
		if !partial {
			done = append(done, e)
			doneTotal += e.size
			continue
		}
		f.cancel(ctx, key, guid)
		f.g.log.Warn("download cancelled: the user's download directory is over its cap", "user", key, "dir", dir, "guid", guid, "cap", f.max)
		// If Chrome did not cancel it, the partial file still must go.
		_ = os.Remove(filepath.Join(dir, e.name))
	}
	slices.SortFunc(done, func(a, b dlFile) int { return b.mod.Compare(a.mod) })
	for _, e := range done {
		if doneTotal <= f.max {
			break
		}
		if err := os.Remove(filepath.Join(dir, e.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			f.g.log.Error("cannot delete a download over the cap", "file", e.name, "err", err)
			continue
		}
		doneTotal -= e.size
		f.g.log.Warn("download deleted: the user's download directory is over its cap", "user", key, "dir", dir, "file", e.name, "bytes", e.size, "cap", f.max)
	}
}

// measure lists the regular files directly in dir and their total size.
func measure(dir string) ([]dlFile, int64) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0
	}
	var out []dlFile
	var total int64
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		out = append(out, dlFile{name: e.Name(), size: info.Size(), mod: info.ModTime()})
		total += info.Size()
	}
	return out, total
}

// cancel cancels download guid in each of the user's contexts; all but the
// one it runs in answer with an error, which is expected.
func (f *fileGuard) cancel(ctx context.Context, key, guid string) {
	u := f.g.users.Lookup(key)
	if u == nil {
		return
	}
	ctx, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	for _, id := range f.g.users.Contexts(u) {
		_, _ = f.g.mux.Call(ctx, "", "Browser.cancelDownload", map[string]any{"guid": guid, "browserContextId": id})
	}
}

// checkFiles enforces the upload directory on DOM.setFileInputFiles and on
// the files of Input.dispatchDragEvent: every path must resolve inside
// Config.UploadDir, and the resolved paths are what Chrome gets, so a link
// swapped in after the check is not followed.
func (g *Guard) checkFiles(cmd relay.Command) relay.Verdict {
	in := map[string]jsonv2.Value{}
	if err := unmarshalParams(cmd.Params, &in); err != nil {
		return refusal(cmd.Method, "unreadable params: "+err.Error())
	}
	holder, key := in, "files"
	var data map[string]jsonv2.Value
	if cmd.Method == "Input.dispatchDragEvent" {
		raw, ok := in["data"]
		if !ok {
			return relay.Verdict{}
		}
		if err := jsonv2.Unmarshal(raw, &data); err != nil {
			return refusal(cmd.Method, "unreadable data: "+err.Error())
		}
		holder = data
	}
	raw, ok := holder[key]
	if !ok {
		return relay.Verdict{}
	}
	var files []string
	if err := jsonv2.Unmarshal(raw, &files); err != nil {
		return refusal(cmd.Method, "files is not a list of paths")
	}
	if len(files) == 0 {
		return relay.Verdict{}
	}
	resolved := make([]string, len(files))
	for i, p := range files {
		r, err := firewall.ResolveInside(g.cfg.UploadDir, p)
		if err != nil {
			if g.cfg.UploadDir == "" {
				return refusal(cmd.Method, fmt.Sprintf("%q: uploads are disabled (no --upload-dir)", p))
			}
			g.log.Debug("upload path refused", "method", cmd.Method, "path", p, "err", err)
			return refusal(cmd.Method, uploadRefusal(i))
		}
		resolved[i] = r
	}
	b, err := jsonv2.Marshal(resolved)
	if err != nil {
		return refusal(cmd.Method, err.Error())
	}
	holder[key] = b
	if data != nil {
		if in["data"], err = jsonv2.Marshal(data); err != nil {
			return refusal(cmd.Method, err.Error())
		}
	}
	params, err := jsonv2.Marshal(in)
	if err != nil {
		return refusal(cmd.Method, err.Error())
	}
	return relay.Verdict{Params: params}
}

// uploadRefusal is the one answer to every path that is not a file inside
// the upload directory, whether it is missing, outside, through a link or
// with "..": an error that differed (the resolver's "lstat ...: no such
// file" for a missing path, "outside" for an existing one) told an agent
// which files exist on the guard's host. It names the entry by index, not
// by path, so the answers for two paths are the same text; the log has the
// cause.
func uploadRefusal(i int) string {
	return fmt.Sprintf("files[%d] is not a file inside the upload directory (missing, outside it, or a link out of it); only files inside the upload directory may be uploaded", i)
}

// refusal is the firewall's error answer: it names the method and why.
func refusal(method, why string) relay.Verdict {
	return relay.Verdict{Refuse: cdpmsg.Refusal(method, why)}
}

// downloadDefaults returns Browser.setDownloadBehavior params for a context
// the guard creates for user key: denied, or into the user's directory, so
// that no download lands in Chrome's default place (a headed browser's
// ~/Downloads) before an agent sets a behavior of its own.
func (g *Guard) downloadDefaults(key, contextID string) (map[string]any, error) {
	p := map[string]any{"behavior": "deny", "browserContextId": contextID}
	if g.cfg.DownloadDir == "" {
		return p, nil
	}
	dir, err := g.userDownloadDir(key)
	if err != nil {
		return nil, err
	}
	p["behavior"], p["downloadPath"] = "allowAndName", dir
	g.files().watch(dir, key)
	return p, nil
}
