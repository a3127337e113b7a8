package main

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// fakeServed counts policy reloads and stops when told.
type fakeServed struct {
	done    chan struct{}
	reloads chan struct{}
}

func (f *fakeServed) URL() string           { return "http://127.0.0.1:1" }
func (f *fakeServed) Done() <-chan struct{} { return f.done }
func (f *fakeServed) Close() error          { return nil }
func (f *fakeServed) ReloadPolicy() error {
	f.reloads <- struct{}{}
	return errors.New("no policy file (the run loop only logs this)")
}

// TestSIGHUPReloadsPolicy: SIGHUP reloads the policy and keeps serving; a
// failed reload is logged, not fatal.
func TestSIGHUPReloadsPolicy(t *testing.T) {
	// The test catches SIGHUP itself too, so a signal sent before run has
	// called signal.Notify does not end the test binary.
	own := make(chan os.Signal, 8)
	signal.Notify(own, syscall.SIGHUP)
	defer signal.Stop(own)
	f := &fakeServed{done: make(chan struct{}), reloads: make(chan struct{}, 8)}
	ret := make(chan error, 1)
	sig, stopSig := stopSignals()
	defer stopSig()
	go func() {
		ret <- run(slog.New(slog.NewTextHandler(io.Discard, nil)), f, func() error { return errors.New("stopped") }, sig)
	}()
	deadline := time.After(10 * time.Second)
	for got := 0; got < 2; {
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		select {
		case <-f.reloads:
			got++
		case <-deadline:
			t.Fatalf("SIGHUP reloaded the policy %d times, want 2", got)
		case <-time.After(100 * time.Millisecond): // run may not be listening yet
		}
	}
	select {
	case err := <-ret:
		t.Fatalf("run returned after SIGHUP: %v", err)
	default:
	}
	close(f.done)
	if err := <-ret; err == nil || err.Error() != "stopped" {
		t.Errorf("run after Done: %v", err)
	}
}
