package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// served is what serve and attach run until a signal: a Supervisor or a
// Guard.
type served interface {
	URL() string
	Done() <-chan struct{}
	Close() error
}

// run serves until SIGTERM/SIGINT (a clean, bounded stop: exit 0) or until
// s stops by itself, which is the error stopped returns (a lost attached
// browser, a supervisor that gave up relaunching): exit non-zero, so the
// orchestrator takes over.
func run(log *slog.Logger, s served, stopped func() error) error {
	log.Info("listening on " + s.URL())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	select {
	case got := <-sig:
		log.Info("stopping", "signal", got.String())
		return s.Close()
	case <-s.Done():
		_ = s.Close()
		return stopped()
	}
}
