package pages

import (
	"sync"
	"testing"
	"time"
)

// TestPageEnd: a page's end ends every slot's record once, after the
// registry's lock is let go (an end hook may ask the registry), and a
// second destroy ends nothing again.
func TestPageEnd(t *testing.T) {
	r, _ := newTest()
	r.Track("T", "C")
	r.Attached("T", "S")
	var ends []string
	a := NewSlot(func(p *Page, v string) {
		ends = append(ends, "a:"+v)
		if got := r.SessionOf(string(p.ID())); got != "" { // the registry answers: its lock is let go
			t.Errorf("session of a destroyed page %q", got)
		}
	})
	b := NewSlot(func(p *Page, v int) { ends = append(ends, "b") })
	p := r.PageOfSession("S")
	if p == nil || p.ID() != "T" || r.Page("T") != p {
		t.Fatalf("page of S = %v, want T's", p)
	}
	a.Set(p, "x")
	if v, loaded := a.LoadOrStore(p, "y"); !loaded || v != "x" {
		t.Fatalf("LoadOrStore = %q, %v; want x, loaded", v, loaded)
	}
	b.Set(p, 1)
	b.Set(p, 2) // replaced: one record, one end
	r.Destroyed("T")
	if len(ends) != 2 || ends[0] != "a:x" || ends[1] != "b" {
		t.Fatalf("ends %v, want [a:x b]", ends)
	}
	if _, ok := a.Get(p); ok {
		t.Fatal("a record outlived its page's end")
	}
	r.Destroyed("T")
	if len(ends) != 2 {
		t.Fatalf("a second destroy ended %v", ends)
	}
}

// TestPageAfterDestroy: within Keep a late event still finds the destroyed
// page (its context, its records), though not by its session; a record set
// on it then is ended when the page is dropped, once.
func TestPageAfterDestroy(t *testing.T) {
	r, c := newTest()
	r.Track("T", "C")
	r.Attached("T", "S")
	ended := 0
	s := NewSlot(func(p *Page, v int) { ended += v })
	r.Destroyed("T")
	p := r.Page("T")
	if p == nil {
		t.Fatal("a destroyed page is gone before Keep")
	}
	if r.PageOfSession("S") != nil {
		t.Fatal("a destroyed page is still found by its session")
	}
	s.Set(p, 1) // a late event
	if v, ok := s.Get(r.Page("T")); !ok || v != 1 {
		t.Fatalf("late record = %d, %v", v, ok)
	}
	c.t = c.t.Add(Keep + time.Second)
	r.Track("U", "C") // any target event prunes
	if r.Page("T") != nil {
		t.Fatal("kept past Keep")
	}
	if ended != 1 {
		t.Fatalf("late record ended %d times, want once", ended)
	}
}

// TestSlotConcurrent: records of many pages are read, written and ended
// from many goroutines at once (run with -race).
func TestSlotConcurrent(t *testing.T) {
	r, _ := newTest()
	var mu sync.Mutex
	ended := 0
	s := NewSlot(func(*Page, *int) { mu.Lock(); ended++; mu.Unlock() })
	ids := []string{"T1", "T2", "T3", "T4"}
	for _, id := range ids {
		r.Track(id, "C")
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				p := r.Page(ids[(i+j)%len(ids)])
				v := j
				s.LoadOrStore(p, &v)
				s.Get(p)
				if j%3 == 0 {
					s.Set(p, &v)
				}
				s.Range(func(*Page, *int) bool { return true })
			}
		}()
	}
	for _, id := range ids {
		wg.Add(1)
		go func() { defer wg.Done(); r.Destroyed(id) }()
	}
	wg.Wait()
	for _, id := range ids { // records set after an end are ended by the drop
		r.Page(id).end()
	}
	mu.Lock()
	defer mu.Unlock()
	n := 0
	s.Range(func(*Page, *int) bool { n++; return true })
	if n != 0 || ended < len(ids) {
		t.Fatalf("%d records left, %d ended", n, ended)
	}
}
