package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// sideResult is the outcome of one vector, for the summary.
type sideResult struct {
	name       string
	leak       bool
	controlBad bool
	skipped    bool
	ran        bool // false when -run left it out
}

// sideSummary collects the results of every vector of one test run.
type sideSummary struct {
	mu      sync.Mutex
	results []*sideResult
}

// vector registers a vector by name and returns its result to fill in.
func (s *sideSummary) vector(name string) *sideResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &sideResult{name: name}
	s.results = append(s.results, r)
	return r
}

// report prints "N vectors, L leaks" and the list through t.Logf and to
// stdout.
func (s *sideSummary) report(t *testing.T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	leaks, bad, skipped := 0, 0, 0
	var lines []string
	n := 0
	for _, r := range s.results {
		if !r.ran {
			continue
		}
		n++
		state := "no leak, control reached"
		switch {
		case r.leak:
			leaks++
			state = "LEAK"
		case r.skipped:
			skipped++
			state = "control SKIPPED (Chrome refuses the vector itself); forbidden run: no leak"
		case r.controlBad:
			bad++
			state = "CONTROL FAILED (vector unproven)"
		}
		lines = append(lines, fmt.Sprintf("  %-30s %s", r.name, state))
	}
	head := fmt.Sprintf("%d vectors, %d leaks", n, leaks)
	if skipped > 0 {
		head += fmt.Sprintf(", %d without a working control (skipped)", skipped)
	}
	if bad > 0 {
		head += fmt.Sprintf(", %d controls failed", bad)
	}
	out := head + "\n" + strings.Join(lines, "\n")
	t.Logf("%s", out)
	fmt.Println(out)
}

// teeHandler sends every record to two handlers.
type teeHandler struct{ a, b slog.Handler }

func (h teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.a.Enabled(ctx, l) || h.b.Enabled(ctx, l)
}

func (h teeHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.a.Handle(ctx, r.Clone())
	if err2 := h.b.Handle(ctx, r); err == nil {
		err = err2
	}
	return err
}

func (h teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return teeHandler{h.a.WithAttrs(as), h.b.WithAttrs(as)}
}

func (h teeHandler) WithGroup(n string) slog.Handler {
	return teeHandler{h.a.WithGroup(n), h.b.WithGroup(n)}
}
