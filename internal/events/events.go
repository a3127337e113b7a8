// Package events routes the browser's events on the guard's own sessions to
// the components that observe them. Each component declares the event
// methods it observes when the guard is built (On); the relay's read loop
// then publishes every event once (Publish), and the bus calls the
// observers of that method in the order they were declared.
//
// A Bus is filled before the browser connection's read loop starts and is
// never changed after: Publish reads it without a lock. Observers run on the
// read loop, so they must not wait for a browser reply (anything that does
// runs in a goroutine its component owns).
package events

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

// Observer handles one event. It runs on the browser connection's read loop.
type Observer func(e *cdpmsg.Envelope)

// Bus maps event methods to their observers. The zero value is an empty
// bus that drops every event.
type Bus struct {
	by     map[string][]entry
	sealed bool
}

type entry struct {
	who string
	fn  Observer
}

// On declares that component who observes methods. It returns an error for
// an empty or malformed method name (a method is "Domain.event") and once
// the bus is sealed, so a mistake in the wiring fails the guard's start-up.
func (b *Bus) On(who string, fn Observer, methods ...string) error {
	if b.sealed {
		return fmt.Errorf("events: %s: the bus is sealed", who)
	}
	if fn == nil || len(methods) == 0 {
		return fmt.Errorf("events: %s: an observer needs a function and at least one method", who)
	}
	for _, m := range methods {
		d, ev, ok := strings.Cut(m, ".")
		if !ok || d == "" || ev == "" || strings.Contains(ev, ".") {
			return fmt.Errorf("events: %s: %q is not a Domain.event method", who, m)
		}
	}
	if b.by == nil {
		b.by = map[string][]entry{}
	}
	for _, m := range methods {
		b.by[m] = append(b.by[m], entry{who: who, fn: fn})
	}
	return nil
}

// Seal ends the declarations; Publish may be called from then on.
func (b *Bus) Seal() { b.sealed = true }

// Publish calls the observers of e.Method in the order they were declared.
func (b *Bus) Publish(e *cdpmsg.Envelope) {
	for _, o := range b.by[e.Method] {
		o.fn(e)
	}
}

// Routes lists, for each observed method in name order, the components
// that observe it in call order: the picture of who hears what, for logs
// and the decision record.
func (b *Bus) Routes() []string {
	out := make([]string, 0, len(b.by))
	for m, es := range b.by {
		who := make([]string, len(es))
		for i, e := range es {
			who[i] = e.who
		}
		out = append(out, m+" → "+strings.Join(who, ", "))
	}
	slices.Sort(out)
	return out
}
