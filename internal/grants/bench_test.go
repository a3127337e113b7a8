package grants

import (
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/policy"
)

// BenchmarkDecideRefusal is the overlay on the path it runs on: a request
// the policy refused (allowed requests never consult grants).
func BenchmarkDecideRefusal(b *testing.B) {
	pol, err := policy.Parse([]string{"allowed.test"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	var s Set
	for _, h := range []string{"a.test", "b.test", "granted.test"} {
		_, _ = s.Add(h, "bench", time.Now())
	}
	d := pol.Decide("https://granted.test/path")
	other := pol.Decide("https://other.test/path")
	b.Run("granted", func(b *testing.B) {
		for b.Loop() {
			if !s.Decide(d).Allowed {
				b.Fatal("not granted")
			}
		}
	})
	b.Run("not granted", func(b *testing.B) {
		for b.Loop() {
			if s.Decide(other).Allowed {
				b.Fatal("granted")
			}
		}
	})
}
