package cdpguard

import (
	"github.com/cdpguard/cdpguard/internal/files"
)

// ErrFileDirs is wrapped by errors about --download-dir and --upload-dir.
var ErrFileDirs = files.ErrDirs

// newFiles checks the configured upload and download directories and wires
// their guard (internal/files) to the guard's log and users; start runs its
// download cap.
func (g *Guard) newFiles() (*files.Dirs, error) {
	limit := g.cfg.DownloadMaxBytes
	if limit == 0 {
		limit = DefaultDownloadMaxBytes
	}
	return files.New(files.Config{UploadDir: g.cfg.UploadDir, DownloadDir: g.cfg.DownloadDir, MaxBytes: limit}, files.Deps{
		Log:      g.log,
		Contexts: g.contextsOf,
	})
}

// contextsOf returns the browser contexts of the user of key, none when
// the user is gone.
func (g *Guard) contextsOf(key string) []string {
	u := g.users.Lookup(key)
	if u == nil {
		return nil
	}
	return g.users.Contexts(u)
}
