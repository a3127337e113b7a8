package pages

import (
	"strconv"
	"testing"
)

// BenchmarkSlot: a feature's look-up of one page's record (Get, as the
// dialogs and the controls do per event) and a walk of every page's
// record (Range, as the worlds do per agent command naming a context),
// with 100 pages.
func BenchmarkSlot(b *testing.B) {
	r := New()
	s := NewSlot[*int](nil)
	var last *Page
	for i := range 100 {
		id := "T" + strconv.Itoa(i)
		r.Track(id, "C")
		last = r.Page(id)
		v := i
		s.Set(last, &v)
	}
	b.Run("Get", func(b *testing.B) {
		for b.Loop() {
			if _, ok := s.Get(r.Page("T50")); !ok {
				b.Fatal("no record")
			}
		}
	})
	b.Run("Range", func(b *testing.B) {
		for b.Loop() {
			n := 0
			s.Range(func(*Page, *int) bool { n++; return true })
		}
	})
}
