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
	ReloadPolicy() error
}

// run serves until SIGTERM/SIGINT (a clean, bounded stop: exit 0) or until
// s stops by itself, which is the error stopped returns (a lost attached
// browser, a supervisor that gave up relaunching): exit non-zero, so the
// orchestrator takes over. SIGHUP reloads the policy file (the guard
// logs the result; a bad file changes nothing).
func run(log *slog.Logger, s served, stopped func() error) error {
	log.Info("listening on " + s.URL())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sig)
	for {
		select {
		case got := <-sig:
			if got == syscall.SIGHUP {
				if err := s.ReloadPolicy(); err != nil {
					log.Warn("SIGHUP: the policy was not reloaded", "err", err)
				}
				continue
			}
			log.Info("stopping", "signal", got.String())
			return s.Close()
		case <-s.Done():
			_ = s.Close()
			return stopped()
		}
	}
}
