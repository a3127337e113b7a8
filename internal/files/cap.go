package files

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cdpguard/cdpguard/internal/clip"
)

// poll is how often the user download directories are measured. A download
// that outruns the cap within one interval is deleted once it is seen.
const poll = 100 * time.Millisecond

// partialSuffix is the name Chrome gives a download in progress.
const partialSuffix = ".crdownload"

// cancelTimeout bounds the cancelling of one download in all of a user's
// contexts.
const cancelTimeout = 2 * time.Second

// Run keeps every user download directory handed out so far within the
// cap until ctx ends, cancelling downloads over it through browser. It
// returns at once when there is no download directory or no cap. The guard
// runs it on a goroutine it owns, once its browser connection exists.
func (f *Dirs) Run(ctx context.Context, browser Caller) {
	if f.cfg.DownloadDir == "" || f.cfg.MaxBytes < 0 {
		return
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.mu.Lock()
		dirs := maps.Clone(f.watched)
		f.mu.Unlock()
		for dir, key := range dirs {
			f.enforce(ctx, browser, dir, key)
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
func (f *Dirs) enforce(ctx context.Context, browser Caller, dir, key string) {
	limit := f.cfg.MaxBytes
	if limit < 0 {
		return
	}
	files, total := measure(dir)
	if total <= limit {
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
		f.cancel(ctx, browser, key, guid)
		f.d.Log.Warn("download cancelled: the user's download directory is over its cap", "user", clip.String(key), "dir", dir, "guid", guid, "cap", limit)
		// If Chrome did not cancel it, the partial file still must go.
		_ = os.Remove(filepath.Join(dir, e.name))
	}
	slices.SortFunc(done, func(a, b dlFile) int { return b.mod.Compare(a.mod) })
	for _, e := range done {
		if doneTotal <= limit {
			break
		}
		if err := os.Remove(filepath.Join(dir, e.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			f.d.Log.Error("cannot delete a download over the cap", "file", e.name, "err", err)
			continue
		}
		doneTotal -= e.size
		f.d.Log.Warn("download deleted: the user's download directory is over its cap", "user", clip.String(key), "dir", dir, "file", e.name, "bytes", e.size, "cap", limit)
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
func (f *Dirs) cancel(ctx context.Context, browser Caller, key, guid string) {
	ids := f.d.Contexts(key)
	if len(ids) == 0 {
		return
	}
	ctx, stop := context.WithTimeout(ctx, cancelTimeout)
	defer stop()
	for _, id := range ids {
		_, _ = browser.Call(ctx, "", "Browser.cancelDownload", map[string]any{"guid": guid, "browserContextId": id})
	}
}
