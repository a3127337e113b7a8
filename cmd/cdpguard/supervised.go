package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/cdpguard/cdpguard/cdpguard"
)

// runSupervised serves until SIGTERM/SIGINT (a clean, bounded stop: exit 0)
// or until the supervisor gives up relaunching a browser that keeps dying
// (an error: exit non-zero, so the orchestrator takes over).
func runSupervised(log *slog.Logger, s *cdpguard.Supervisor) error {
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
		return s.Err()
	}
}
