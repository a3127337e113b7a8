package policyfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestWatcherConfigMapSwap updates the file as the kubelet updates a
// ConfigMap volume: the path is a symlink through ..data, and an update
// writes a new directory and swaps the ..data symlink by rename.
func TestWatcherConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	writeVersion := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "policy.yaml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(name, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	writeVersion("..v1", "allow: [a.example]\n")
	path := filepath.Join(dir, "policy.yaml")
	if err := os.Symlink(filepath.Join("..data", "policy.yaml"), path); err != nil {
		t.Fatal(err)
	}
	_, sum, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		s   *Set
		err error
	}
	// The watcher says the content changed; its owner reads it again, as
	// policystate does.
	got := make(chan result, 4)
	w := NewWatcher(path, sum, 10*time.Millisecond, func(err error) {
		if err == nil {
			var s *Set
			s, _, err = Read(path)
			got <- result{s, err}
			return
		}
		got <- result{nil, err}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	next := func() result {
		t.Helper()
		select {
		case r := <-got:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("the watcher reported nothing")
		}
		return result{}
	}
	writeVersion("..v2", "allow: [b.example]\n")
	if r := next(); r.err != nil || r.s.Default().Policy.Origins()[0] != "b.example" {
		t.Fatalf("after the swap: %+v", r)
	}
	writeVersion("..v3", "allow: [\"bad entry\"]\n")
	if r := next(); r.err == nil {
		t.Fatal("a bad file must be reported as an error")
	}
	// The same content again (a touch, a re-swap) is not a change.
	writeVersion("..v4", "allow: [\"bad entry\"]\n")
	writeVersion("..v5", "allow: [c.example]\n")
	if r := next(); r.err != nil || r.s.Default().Policy.Origins()[0] != "c.example" {
		t.Fatalf("after the third swap: %+v", r)
	}
}

// TestWatcherFIFO swaps a FIFO in for the policy file, as the issue's
// attacker with write access to the directory did: the watcher reports it
// as not a regular file without blocking on it (it opens with O_NONBLOCK
// and judges the file it opened), then sees the regular file renamed over
// it, and Run returns when told to.
func TestWatcherFIFO(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte("allow: [a.example]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, sum, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 8)
	w := NewWatcher(path, sum, 10*time.Millisecond, func(err error) { got <- err })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	stopped := false
	defer func() {
		if !stopped {
			cancel()
			<-done
		}
	}()
	next := func() error {
		t.Helper()
		select {
		case err := <-got:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("the watcher reported nothing in 10 s (blocked on the FIFO?)")
		}
		return nil
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fifo, path); err != nil {
		t.Fatal(err)
	}
	if err := next(); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("a FIFO at the path: %v, want ErrNotRegular", err)
	}
	tmp := filepath.Join(dir, "tmp.yaml")
	if err := os.WriteFile(tmp, []byte("allow: [b.example]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if err := next(); err != nil {
		t.Fatalf("the regular file renamed over the FIFO: %v", err)
	}
	if s, _, err := Read(path); err != nil || s.Default().Policy.Origins()[0] != "b.example" {
		t.Fatalf("after the FIFO: %v", err)
	}
	cancel()
	stopped = true
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return in 10 s after its context ended")
	}
}
