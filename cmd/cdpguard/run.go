package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// served is what serve and attach run until a signal: a Supervisor or a
// Guard.
type served interface {
	URL() string
	Done() <-chan struct{}
	Close() error
	ReloadPolicy() error
}

// reloadStopWait bounds how long a stop waits for a SIGHUP's reload that
// is still running once the guard is closed: the process exits anyway,
// and the reload with it.
const reloadStopWait = 2 * time.Second

// run serves until SIGTERM/SIGINT (a clean, bounded stop: exit 0) or until
// s stops by itself, which is the error stopped returns (a lost attached
// browser, a supervisor that gave up relaunching): exit non-zero, so the
// orchestrator takes over. SIGHUP reloads the policy file (the guard
// logs the result; a bad file changes nothing) off the signal loop, so a
// slow reload never holds up a SIGTERM and no SIGHUP is lost.
//
// sig is stopSignals' channel, made before the guard started.
func run(log *slog.Logger, s served, stopped func() error, sig <-chan os.Signal) error {
	log.Info("listening on " + s.URL())
	r := startReloader(log, s)
	for {
		select {
		case got := <-sig:
			if got == syscall.SIGHUP {
				r.want()
				continue
			}
			log.Info("stopping", "signal", got.String())
			r.stop()
			err := s.Close()
			r.wait(reloadStopWait)
			return err
		case <-s.Done():
			r.stop()
			_ = s.Close()
			r.wait(reloadStopWait)
			return stopped()
		}
	}
}

// stopSignals starts catching the signals run handles, and returns their
// channel and what stops catching them. serve and attach call it before
// they start the guard: a SIGTERM during the start or right after it (an
// orchestrator's, or a test's on the "listening on" line) is then run's
// clean stop, not the default action, which ends the process at once and
// leaves the browser's profile behind (fresh-clone runs 26 and 27:
// TestSIGKILLTakesBrowserDown's SIGTERM came before run's Notify). A
// signal that comes during the start waits in the channel until run.
func stopSignals() (<-chan os.Signal, func()) {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	return sig, func() { signal.Stop(sig) }
}

// reloader runs the SIGHUP reloads of one run, one at a time, on a
// goroutine of its own: run owns it, and it ends after stop, once the
// reload in progress (if any) returns. A SIGHUP while a reload runs sets
// the one-slot wanted flag, so it is never lost, and any number of them
// coalesce into one more reload, which reads the newest file.
type reloader struct {
	wanted chan struct{} // one slot: a reload is wanted
	quit   chan struct{}
	done   chan struct{}
}

func startReloader(log *slog.Logger, s served) *reloader {
	r := &reloader{wanted: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			select {
			case <-r.quit:
				return
			case <-r.wanted:
			}
			select { // a stop that came with the SIGHUP wins
			case <-r.quit:
				return
			default:
			}
			log.Info("SIGHUP: reloading the policy file")
			if err := s.ReloadPolicy(); err != nil {
				log.Warn("SIGHUP: the policy was not reloaded", "err", err)
			}
		}
	}()
	return r
}

// want asks for a reload without waiting.
func (r *reloader) want() {
	select {
	case r.wanted <- struct{}{}:
	default: // one is wanted already; it will read the newest file
	}
}

// stop tells the reloader to start no more reloads.
func (r *reloader) stop() { close(r.quit) }

// wait waits up to d for the reload in progress, if any, to return.
func (r *reloader) wait(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
	}
}
