package policyfile

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// DefaultPoll is how often a Watcher looks at the file. Reading a small
// file twice a second costs nothing measurable, and it bounds the time
// from a write to enforcement at about half a second plus the parse.
const DefaultPoll = 500 * time.Millisecond

// ErrNotRegular is returned for a policy file path that is not a regular
// file (a directory, a FIFO, a device).
var ErrNotRegular = errors.New("not a regular file")

// Read reads and parses the policy file at path (following symlinks, as a
// ConfigMap volume's path is one), returning the Set and the SHA-256 of
// the content read.
func Read(path string) (*Set, [32]byte, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, [32]byte{}, err
	}
	sum := sha256.Sum256(data)
	s, err := Parse(data)
	if err != nil {
		return nil, sum, fmt.Errorf("policy file %s: %w", path, err)
	}
	return s, sum, nil
}

// readLimited reads at most MaxBytes+1 bytes of path, so Parse can refuse
// an oversize file without it being read whole.
// Anything but a regular file (after symlinks) is refused before it is
// opened: opening a FIFO would block the watcher, and the guard's Close
// with it.
func readLimited(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("policy file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("policy file %s: %w", path, ErrNotRegular)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("policy file: %w", err)
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	return data, nil
}

// Watcher polls a policy file and reports every new content. Polling the
// path (rather than inotify on the file) sees every way the file changes:
// written in place, renamed over, or a ConfigMap volume swapping its
// ..data symlink, which replaces the directory the path resolves through.
// The content's hash, not its mtime, says whether it changed, so a
// rewrite within one mtime tick is seen and a touch is not a reload.
type Watcher struct {
	path     string
	interval time.Duration
	last     [32]byte
	// OnChange is called from Run with the file's new parse result: a Set,
	// or the error that kept it from being one. It is called once per new
	// content, not on every poll.
	onChange func(*Set, error)
}

// NewWatcher returns a Watcher of path that treats content with hash
// current as already seen; interval ≤ 0 means DefaultPoll.
func NewWatcher(path string, current [32]byte, interval time.Duration, onChange func(*Set, error)) *Watcher {
	if interval <= 0 {
		interval = DefaultPoll
	}
	return &Watcher{path: path, interval: interval, last: current, onChange: onChange}
}

// Run polls until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		data, err := readLimited(w.path)
		if err != nil {
			// A missing file mid-swap is transient; report a lasting one
			// once per distinct error.
			if errors.Is(err, os.ErrNotExist) && lastErr == "" {
				lastErr = "missing"
				continue
			}
			if err.Error() != lastErr {
				lastErr = err.Error()
				w.onChange(nil, err)
			}
			continue
		}
		lastErr = ""
		sum := sha256.Sum256(data)
		if sum == w.last {
			continue
		}
		w.last = sum
		s, err := Parse(data)
		if err != nil {
			err = fmt.Errorf("policy file %s: %w", w.path, err)
		}
		w.onChange(s, err)
	}
}
