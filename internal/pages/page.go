package pages

import (
	"sync"

	"github.com/chromedp/cdproto/target"
)

// Page is what the guard knows of one target, as chromedp's Target owns
// its frames and contexts: the registry's own marks (its browser context,
// whether it is a tab, the guard's session on it, its setup) and each
// feature's record of it, held in a Slot the feature declares. A page is
// made when the registry first hears of its target and kept for Keep after
// Target.targetDestroyed, so that a late event still finds it; its end
// (Destroyed) ends every feature's record on it in one place.
type Page struct {
	id target.ID

	// Under Registry.mu.
	context string // browser context as Chrome last reported it; "" unknown
	session string // the guard's session on it, for a page the guard set up
	page    bool   // a page (a tab): counted against the per-user tab cap
	notWeb  string // why it is not web content (firewall.NotWeb); "" web content
	gone    bool   // destroyed, kept for late events
	// setup is closed when the guard's setup of the target ended (setup.go);
	// nil until its end or a wait for it.
	setup chan struct{}

	// mu guards slots; a leaf, never held with a Slot's lock or the
	// registry's.
	mu    sync.Mutex
	slots []ender // the slots holding a record of this page
}

// ID returns the page's target id.
func (p *Page) ID() target.ID { return p.id }

// ender is a Slot seen from its pages.
type ender interface {
	endPage(p *Page)
}

// hold notes that s holds a record of p.
func (p *Page) hold(s ender) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, x := range p.slots {
		if x == s {
			return
		}
	}
	p.slots = append(p.slots, s)
}

// end ends every feature's record on p, each once: at the target's
// destruction, and again when the page is dropped after Keep (a record a
// late event set after the first). The caller holds no lock.
func (p *Page) end() {
	p.mu.Lock()
	slots := p.slots
	p.slots = nil
	p.mu.Unlock()
	for _, s := range slots {
		s.endPage(p)
	}
}

// Slot is one feature's record of each page (T is usually a pointer to
// the feature's own struct): the feature declares it once and reads and
// writes its record through the page, instead of keeping a map keyed by
// target id; internal/pages needs to know nothing of the feature. Its
// methods are safe for concurrent use; its lock is a leaf.
type Slot[T any] struct {
	end func(p *Page, v T)

	mu   sync.Mutex
	vals map[*Page]T
}

// NewSlot returns a slot whose records end with their page: end (nil for
// none) is called once for each, after the page's target was destroyed,
// on the goroutine that reported it (the browser connection's read loop),
// with no lock of the registry held.
func NewSlot[T any](end func(p *Page, v T)) *Slot[T] {
	return &Slot[T]{end: end, vals: map[*Page]T{}}
}

// Get returns p's record; ok is false when it has none (or p is nil).
func (s *Slot[T]) Get(p *Page) (v T, ok bool) {
	if p == nil {
		return v, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok = s.vals[p]
	return v, ok
}

// Set makes v p's record, replacing any (the replaced one is not ended).
func (s *Slot[T]) Set(p *Page, v T) {
	if p == nil {
		return
	}
	s.mu.Lock()
	s.vals[p] = v
	s.mu.Unlock()
	p.hold(s)
}

// LoadOrStore returns p's record, storing v first when it has none;
// loaded says it was there. A nil p stores nothing and returns v.
func (s *Slot[T]) LoadOrStore(p *Page, v T) (actual T, loaded bool) {
	if p == nil {
		return v, false
	}
	s.mu.Lock()
	if old, ok := s.vals[p]; ok {
		s.mu.Unlock()
		return old, true
	}
	s.vals[p] = v
	s.mu.Unlock()
	p.hold(s)
	return v, false
}

// Delete drops p's record without ending it and returns it.
func (s *Slot[T]) Delete(p *Page) (v T, ok bool) {
	if p == nil {
		return v, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok = s.vals[p]
	delete(s.vals, p)
	return v, ok
}

// Range calls f with each page's record until f returns false. f runs
// under the slot's lock (no copy: Range is on hot paths), so it must not
// call the slot's methods.
func (s *Slot[T]) Range(f func(p *Page, v T) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, v := range s.vals {
		if !f(p, v) {
			return
		}
	}
}

// endPage drops p's record and calls the slot's end with it.
func (s *Slot[T]) endPage(p *Page) {
	s.mu.Lock()
	v, ok := s.vals[p]
	delete(s.vals, p)
	s.mu.Unlock()
	if ok && s.end != nil {
		s.end(p, v)
	}
}
