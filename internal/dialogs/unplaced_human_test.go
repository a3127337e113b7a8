package dialogs

import (
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

// TestUnplacedSessionHumanGrace: with a human, a dialog on a session the
// page registry does not place waits the grace; once Chrome says it
// closed (the human answered it), its timer must not answer the next
// dialog on that session before that one's own grace, and each dialog
// gets at most one answer from the guard. (Before the page object, both
// dialogs shared the session's state: Closed and the second Opening
// stopped the first's timer.)
func TestUnplacedSessionHumanGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &rec{}
		h := New(r, testPages, time.Hour, nil)
		defer h.Close()
		h.SetHuman(true, nil)
		h.Opening("SX", ev("alert"))
		h.Closed("SX") // the human answered the first
		time.Sleep(30 * time.Minute)
		h.Opening("SX", ev("alert")) // the second gets its own hour
		time.Sleep(31 * time.Minute) // past the first's hour
		synctest.Wait()
		if n := r.n(); n != 0 {
			t.Fatalf("the closed first dialog's timer answered the second 29 minutes early: %d answers %v", n, r.got)
		}
		time.Sleep(30 * time.Minute) // past the second's hour
		synctest.Wait()
		if n := r.n(); n != 1 {
			t.Fatalf("the second dialog got %d answers, want 1: %v", n, r.got)
		}
	})
}

// TestUnplacedSessionEvicted: TestUnplacedSessionHumanGrace once the
// session's state was dropped for room (maxLoose other unplaced sessions
// opened dialogs since): the first dialog's timer still must not answer
// the session's next dialog before that one's own grace.
func TestUnplacedSessionEvicted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &rec{}
		h := New(r, testPages, time.Hour, nil)
		defer h.Close()
		h.SetHuman(true, nil)
		h.Opening("SX", ev("alert"))
		for i := range maxLoose { // other unplaced sessions' dialogs meanwhile
			s := "SY" + strconv.Itoa(i)
			h.Opening(s, ev("alert"))
			h.Closed(s)
		}
		h.Closed("SX") // the human answered the first
		time.Sleep(30 * time.Minute)
		h.Opening("SX", ev("alert")) // the second gets its own hour
		time.Sleep(31 * time.Minute) // past the first's hour
		synctest.Wait()
		for _, a := range r.got {
			if a["session"] == "SX" {
				t.Fatalf("the closed first dialog's timer answered the second early: %v", r.got)
			}
		}
	})
}
