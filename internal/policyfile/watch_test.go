package policyfile

import (
	"context"
	"os"
	"path/filepath"
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
	got := make(chan result, 4)
	w := NewWatcher(path, sum, 10*time.Millisecond, func(s *Set, err error) { got <- result{s, err} })
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
