package dialogs

import (
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cdpguard/cdpguard/internal/pages"
)

// TestPageEndStopsAnswer: the page's end in the page registry alone (no
// Forget, as the guard's wiring no longer calls it) stops the pending
// answer of its dialog and drops its listeners.
func TestPageEndStopsAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := pages.New()
		reg.Track("T", "C")
		reg.Attached("T", "S")
		r := &rec{}
		h := New(r, reg, time.Hour, nil)
		defer h.Close()
		owner := new(int)
		h.Attach("S", "T")
		h.Listen(owner, "A", "T", true)
		h.Opening("S", ev("alert"))
		reg.Destroyed("T")
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		if r.n() != 0 {
			t.Fatalf("a destroyed page's dialog was answered: %v", r.got)
		}
		if done, _ := h.Claim(owner, "A"); done != nil {
			t.Fatal("the agent still listens on the destroyed page")
		}
	})
}

// TestPageEndConcurrent: pages ending on the read loop while agents
// listen, claim and dialogs open and close on other goroutines: no race,
// no deadlock (run with -race -count).
func TestPageEndConcurrent(t *testing.T) {
	reg := pages.New()
	r := &rec{}
	h := New(r, reg, time.Hour, nil)
	const n = 200
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the read loop: targets come and go
		defer wg.Done()
		for i := range n {
			id := "T" + strconv.Itoa(i)
			reg.Track(id, "C")
			reg.Attached(id, "S"+id)
			h.Attach("S"+id, id)
			h.Opening("S"+id, ev("alert"))
			reg.Destroyed(id)
		}
	}()
	go func() { // agents
		defer wg.Done()
		owner := new(int)
		for i := range n {
			id := "T" + strconv.Itoa(i)
			h.Listen(owner, "A", id, true)
			if done, _ := h.Claim(owner, "A"); done != nil {
				done(true)
			}
			h.Closed("S" + id)
		}
		h.ForgetOwner(owner)
	}()
	wg.Wait()
	h.Close()
}
