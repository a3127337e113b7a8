// Package files keeps agents' file transfers to the operator's
// directories: uploads (DOM.setFileInputFiles, the files an
// Input.dispatchDragEvent drops) only of files inside the upload directory
// (--upload-dir), downloads only into the user's own directory under the
// download directory (--download-dir: Browser.setDownloadBehavior and
// Page.setDownloadBehavior rewritten, each new browser context's default
// set), and each user's directory kept under a cap. It observes no CDP
// events; the cap cancels downloads with Browser.cancelDownload.
package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// ErrDirs is wrapped by errors about the download and upload directories;
// cdpguard exports it as ErrFileDirs.
var ErrDirs = errors.New("cdpguard: bad file directory")

// Config is the operator's file settings.
type Config struct {
	// UploadDir is the one directory files may be uploaded from ("": no
	// uploads). It must exist.
	UploadDir string
	// DownloadDir holds the users' download directories ("": downloads
	// are denied). It is created if missing.
	DownloadDir string
	// MaxBytes caps each user's download directory; negative: no cap.
	MaxBytes int64
}

// Caller sends a command over the guard's browser connection and waits for
// its reply (relay.Mux).
type Caller interface {
	Call(ctx context.Context, sessionID, method string, params any) (jsonv2.Value, error)
}

// Deps is what Dirs needs of the guard.
type Deps struct {
	Log *slog.Logger
	// Contexts returns the browser contexts of the user of key, where a
	// download of theirs may run (none: the user is gone).
	Contexts func(key string) []string
}

// Dirs enforces the upload and download directories. Its methods are safe
// for concurrent use.
type Dirs struct {
	cfg Config
	d   Deps

	mu      sync.Mutex
	watched map[string]string // user download directory → user key
}

// New checks cfg's directories (creating the download directory if
// missing; the upload directory must exist), so that a typo stops start-up
// instead of refusing every upload later, and returns their guard.
func New(cfg Config, d Deps) (*Dirs, error) {
	if cfg.DownloadDir != "" {
		if err := os.MkdirAll(cfg.DownloadDir, 0o700); err != nil {
			return nil, fmt.Errorf("%w: download directory: %w", ErrDirs, err)
		}
	}
	if cfg.UploadDir != "" {
		st, err := os.Stat(cfg.UploadDir)
		if err != nil {
			return nil, fmt.Errorf("%w: upload directory: %w", ErrDirs, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("%w: upload directory %s is not a directory", ErrDirs, cfg.UploadDir)
		}
	}
	return &Dirs{cfg: cfg, d: d, watched: map[string]string{}}, nil
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

// userDir returns (creating it) the user's download directory, and has the
// cap measure it.
func (f *Dirs) userDir(key string) (string, error) {
	dir := filepath.Join(f.cfg.DownloadDir, userDirName(key))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("%w: %w", ErrDirs, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrDirs, err)
	}
	f.mu.Lock()
	f.watched[abs] = key
	f.mu.Unlock()
	return abs, nil
}

// RewriteDownloads rewrites Browser/Page.setDownloadBehavior of the user
// of key: without a download directory every behavior becomes "deny"
// (Playwright's own connectOverCDP setup still gets success); with one,
// any behavior but "deny" becomes "allowAndName" into the user's
// directory, named by download guid so that the cap can cancel downloads
// in progress. The agent's downloadPath is never used.
func (f *Dirs) RewriteDownloads(key string, cmd relay.Command) relay.Verdict {
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
	case behavior == "deny" || f.cfg.DownloadDir == "":
		out["behavior"] = jsonv2.Value(`"deny"`)
		if behavior != "deny" {
			f.d.Log.Debug("downloads denied (no --download-dir): clients see each download end as canceled", "user", clip.String(key), "asked", behavior)
		}
	default:
		dir, err := f.userDir(key)
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
			f.d.Log.Info("downloads go to the user's directory, not the one the agent asked for; Browser.downloadProgress filePath names each file", "user", clip.String(key), "dir", dir)
		}
	}
	params, err := jsonv2.Marshal(out)
	if err != nil {
		return refusal(cmd.Method, err.Error())
	}
	return relay.Verdict{Params: params}
}

// Defaults returns Browser.setDownloadBehavior params for a context the
// guard creates for the user of key: denied, or into the user's directory,
// so that no download lands in Chrome's default place (a headed browser's
// ~/Downloads) before an agent sets a behavior of its own.
func (f *Dirs) Defaults(key, contextID string) (map[string]any, error) {
	p := map[string]any{"behavior": "deny", "browserContextId": contextID}
	if f.cfg.DownloadDir == "" {
		return p, nil
	}
	dir, err := f.userDir(key)
	if err != nil {
		return nil, err
	}
	p["behavior"], p["downloadPath"] = "allowAndName", dir
	return p, nil
}

// refusal is the firewall's error answer: it names the method and why.
func refusal(method, why string) relay.Verdict {
	return relay.Verdict{Refuse: cdpmsg.Refusal(method, why)}
}

// unmarshalParams decodes command params; absent params are an empty object.
func unmarshalParams(params []byte, v any) error {
	if len(params) == 0 {
		return nil
	}
	return jsonv2.Unmarshal(params, v)
}
