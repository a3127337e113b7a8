package policystate

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/policyfile"
)

// syncBuffer is a log sink safe for the watcher's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRecheckFirst: after a reload swaps the policy in, the tunnels are
// rechecked (Recheck, which sees the new policy) before the diff is
// logged and MCP clients are told (OnChange); a reload of the content in
// force rechecks nothing.
func TestRecheckFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	write(t, path, "allow: [one.test, gone.test]\n")
	s, sum, err := policyfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	var order []string
	var st *State
	st = New(s, sum, Deps{File: path, Log: slog.New(slog.NewTextHandler(&log, nil)),
		Recheck: func() int {
			order = append(order, "recheck")
			if allows(st, "", "https://gone.test/") {
				t.Error("Recheck ran before the new policy was in force")
			}
			if strings.Contains(log.String(), "policy reloaded") {
				t.Error("Recheck ran after the reload's log line")
			}
			return 1
		},
		OnChange: func() { order = append(order, "changed") },
	})
	write(t, path, "allow: [one.test]\n")
	if err := st.Reload("test"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, ",") != "recheck,changed" || !strings.Contains(log.String(), "tunnelsClosed=1") {
		t.Errorf("order %v, log %q", order, log.String())
	}
	if err := st.Reload("same"); err != nil || len(order) != 2 {
		t.Errorf("a reload of the content in force: %v, order %v", err, order)
	}
}

// TestWatchFIFO: a FIFO swapped in for the policy file is refused without
// blocking the watcher; a regular file renamed over it later is put in
// force, and Watch returns when its context ends.
func TestWatchFIFO(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	write(t, path, "allow: [one.test]\n")
	st, _, _ := fromFile(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); st.Watch(ctx) }()
	stopped := false
	defer func() {
		if !stopped {
			cancel()
			<-done
		}
	}()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fifo, path); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	for i := 2; i <= 3; i++ { // two reloads after the FIFO
		host := strings.Repeat("x", i) + ".test"
		write(t, tmp, "allow: ["+host+"]\n")
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); !allows(st, "", "https://"+host+"/"); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("reload %d after the FIFO not in force within 10 s", i)
			}
		}
	}
	cancel()
	stopped = true
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not return within 10 s of its context ending")
	}
}

// TestWatchDoesNotWaitOutAReload: a watcher whose reload waits for the
// lock (held by a slow SIGHUP reload) returns when its context ends, so
// the guard's Close does not wait for the other reload.
func TestWatchDoesNotWaitOutAReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	write(t, path, "allow: [one.test]\n")
	st, _, _ := fromFile(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); st.Watch(ctx) }()
	defer func() { cancel(); <-done }()
	write(t, path, "allow: [two.test]\n") // the watcher is running
	for deadline := time.Now().Add(10 * time.Second); !allows(st, "", "https://two.test/"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watcher did not reload within 10 s")
		}
	}
	if !st.acquire(context.Background()) { // a SIGHUP's reload in progress
		t.Fatal("lock")
	}
	defer st.release()
	write(t, path, "allow: [three.test]\n") // the watcher's reload waits for the lock
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Watch waited more than 10 s for a reload it did not run")
	}
}

// TestUnknownGroupNamesBounded: the refusal of an unknown group lists at
// most maxLogged of the file's groups and says how many more there are.
func TestUnknownGroupNamesBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("allow: [a.test]\ngroupHeader: X-Group\nunknownGroup: refuse\ngroups:\n")
	for i := range 500 {
		b.WriteString("  g" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("0", i/26) + ": {}\n")
	}
	path := filepath.Join(t.TempDir(), "p.yaml")
	write(t, path, b.String())
	st, _, _ := fromFile(t, path)
	_, err := st.KeyOf(http.Header{"X-Group": {"nobody"}}, "X-User", nil)
	if err == nil || len(err.Error()) > 1000 || !strings.Contains(err.Error(), "more)") {
		t.Errorf("the refusal of an unknown group under 500 groups: %d bytes: %.300v", len(fmt.Sprint(err)), err)
	}
}
