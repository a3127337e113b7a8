package main

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// slowServed is a served whose policy reloads block until released.
type slowServed struct {
	done     chan struct{}
	started  chan struct{} // a reload started
	release  chan struct{} // lets one reload return
	reloads  atomic.Int32
	closed   atomic.Bool
	finished chan struct{} // closed when the test is over: blocked reloads return
}

func newSlowServed() *slowServed {
	return &slowServed{done: make(chan struct{}), started: make(chan struct{}, 8), release: make(chan struct{}, 8), finished: make(chan struct{})}
}

func (f *slowServed) URL() string           { return "http://127.0.0.1:1" }
func (f *slowServed) Done() <-chan struct{} { return f.done }
func (f *slowServed) Close() error          { f.closed.Store(true); return nil }
func (f *slowServed) ReloadPolicy() error {
	f.reloads.Add(1)
	f.started <- struct{}{}
	select {
	case <-f.release:
	case <-f.finished:
	}
	return nil
}

func waitFor(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: nothing in 10 s", what)
	}
}

// TestSIGTERMDuringReload: a SIGTERM while a SIGHUP's reload is still
// running stops the daemon (Close, and run returns) without waiting for
// the reload beyond reloadStopWait.
func TestSIGTERMDuringReload(t *testing.T) {
	own := make(chan os.Signal, 8) // a signal sent before run's Notify must not end the test binary
	signal.Notify(own, syscall.SIGHUP, syscall.SIGTERM)
	defer signal.Stop(own)
	f := newSlowServed()
	defer close(f.finished)
	ret := make(chan error, 1)
	sig, stopSig := stopSignals()
	defer stopSig()
	go func() {
		ret <- run(slog.New(slog.NewTextHandler(io.Discard, nil)), f, func() error { return errors.New("stopped") }, sig)
	}()
	deadline := time.After(10 * time.Second)
	for started := false; !started; {
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		select {
		case <-f.started:
			started = true
		case <-deadline:
			t.Fatal("SIGHUP started no reload in 10 s")
		case <-time.After(100 * time.Millisecond): // run may not be listening yet
		}
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ret:
		if err != nil || !f.closed.Load() {
			t.Errorf("run after SIGTERM: %v, closed %v", err, f.closed.Load())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return within 10 s of a SIGTERM during a reload")
	}
}

// TestReloaderCoalesces: reloads wanted while one runs are not lost and
// make one more reload, not one each; stop starts no more.
func TestReloaderCoalesces(t *testing.T) {
	f := newSlowServed()
	defer close(f.finished)
	r := startReloader(slog.New(slog.NewTextHandler(io.Discard, nil)), f)
	r.want()
	waitFor(t, f.started, "the first reload")
	r.want()
	r.want()
	r.want()
	f.release <- struct{}{}
	waitFor(t, f.started, "the reload wanted while the first ran")
	r.stop()
	f.release <- struct{}{}
	waitFor(t, r.done, "the reloader's end after stop")
	if n := f.reloads.Load(); n != 2 {
		t.Errorf("%d reloads, want 2 (the first and one for the three wanted while it ran)", n)
	}
}
