package policyfile

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
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
	return ReadNew(path, [32]byte{})
}

// ReadNew is Read, except that content whose SHA-256 is current is not
// parsed: it returns a nil Set, the hash and no error, so a SIGHUP with an
// unchanged file costs a read and a hash, not a parse.
func ReadNew(path string, current [32]byte) (*Set, [32]byte, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, [32]byte{}, err
	}
	sum := sha256.Sum256(data)
	if sum == current {
		return nil, sum, nil
	}
	s, err := Parse(data)
	if err != nil {
		return nil, sum, fmt.Errorf("policy file %s: %w", path, err)
	}
	return s, sum, nil
}

// readLimited reads at most MaxBytes+1 bytes of path, so Parse can refuse
// an oversize file without it being read whole. Anything but a regular
// file (after symlinks) is refused, judged on the file it opened, not on
// the path: a stat then an open by name would let a FIFO swapped in
// between block the open, and with it the watcher and the guard's Close.
// The open does not block (O_NONBLOCK: a FIFO without a writer opens at
// once, to be refused), and on a regular file O_NONBLOCK changes nothing.
func readLimited(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("policy file: %w", err)
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("policy file %s: %w", path, ErrNotRegular)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	return data, nil
}

// Watcher polls a policy file and reports every new content; it does not
// parse it (its owner reads the file again under its reload lock, so the
// watcher's reading would be parsed for nothing). Polling the
// path (rather than inotify on the file) sees every way the file changes:
// written in place, renamed over, or a ConfigMap volume swapping its
// ..data symlink, which replaces the directory the path resolves through.
// The content's hash, not its mtime, says whether it changed, so a
// rewrite within one mtime tick is seen and a touch is not a reload.
type Watcher struct {
	path     string
	interval time.Duration
	last     [32]byte
	// onChange is called from Run once per new content (err nil), not on
	// every poll, and once per distinct error that kept the file from
	// being read (a missing file, a FIFO, a directory).
	onChange func(err error)
}

// NewWatcher returns a Watcher of path that treats content with hash
// current as already seen; interval ≤ 0 means DefaultPoll.
func NewWatcher(path string, current [32]byte, interval time.Duration, onChange func(err error)) *Watcher {
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
				w.onChange(err)
			}
			continue
		}
		lastErr = ""
		sum := sha256.Sum256(data)
		if sum == w.last {
			continue
		}
		w.last = sum
		w.onChange(nil)
	}
}
