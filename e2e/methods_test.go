package e2e

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
)

// methodRecorder is a slog.Handler that records the guard's "agent command"
// debug lines: every command an agent sends on a browser-level session, and
// every refusal. It passes records on to next (CDPGUARD_E2E_LOG=1).
type methodRecorder struct {
	next    slog.Handler
	mu      *sync.Mutex
	cmds    *[]recordedCmd
	targets *[]recordedTarget
}

// recordedTarget is a target the guard saw (its "target" debug line).
type recordedTarget struct {
	id, typ, url, context, notWeb string
}

type recordedCmd struct {
	method, refused string
	browser         bool
}

func newMethodRecorder(next *slog.Logger) *methodRecorder {
	r := &methodRecorder{mu: &sync.Mutex{}, cmds: &[]recordedCmd{}, targets: &[]recordedTarget{}}
	if next != nil {
		r.next = next.Handler()
	}
	return r
}

func (r *methodRecorder) logger() *slog.Logger { return slog.New(r) }

func (r *methodRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *methodRecorder) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Message == "agent command" {
		var c recordedCmd
		rec.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "method":
				c.method = a.Value.String()
			case "refused":
				c.refused = a.Value.String()
			case "browserLevel":
				c.browser = a.Value.Bool()
			}
			return true
		})
		r.mu.Lock()
		*r.cmds = append(*r.cmds, c)
		r.mu.Unlock()
	}
	if rec.Message == "target" {
		var tg recordedTarget
		rec.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "id":
				tg.id = a.Value.String()
			case "type":
				tg.typ = a.Value.String()
			case "url":
				tg.url = a.Value.String()
			case "context":
				tg.context = a.Value.String()
			case "notWeb":
				tg.notWeb = a.Value.String()
			}
			return true
		})
		r.mu.Lock()
		*r.targets = append(*r.targets, tg)
		r.mu.Unlock()
	}
	if r.next != nil && r.next.Enabled(ctx, rec.Level) {
		return r.next.Handle(ctx, rec)
	}
	return nil
}

// seenTargets returns every target event the guard logged so far.
func (r *methodRecorder) seenTargets() []recordedTarget {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(*r.targets)
}

func (r *methodRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	c := *r
	if r.next != nil {
		c.next = r.next.WithAttrs(as)
	}
	return &c
}

func (r *methodRecorder) WithGroup(name string) slog.Handler {
	c := *r
	if r.next != nil {
		c.next = r.next.WithGroup(name)
	}
	return &c
}

// check logs the browser-session methods client sent since the last check
// and fails t for every one the browser-level allowlist refused.
func (r *methodRecorder) check(t *testing.T, client string) {
	t.Helper()
	r.mu.Lock()
	cmds := *r.cmds
	*r.cmds = nil
	r.mu.Unlock()
	var methods []string
	for _, c := range cmds {
		if c.browser {
			methods = append(methods, c.method)
		}
		if strings.Contains(c.refused, "allowlist") {
			t.Errorf("%s: the browser-level allowlist refused %s: %s", client, c.method, c.refused)
		}
	}
	slices.Sort(methods)
	methods = slices.Compact(methods)
	if len(methods) == 0 {
		t.Errorf("%s: no browser-session command recorded (is the guard logging at debug level?)", client)
	}
	t.Logf("%s sent on the browser session: %s", client, strings.Join(methods, " "))
}
