package grants

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/policy"
)

func TestNormalize(t *testing.T) {
	ok := map[string]string{
		"Example.COM":      "example.com",
		"example.com.":     "example.com",
		"bücher.example":   "xn--bcher-kva.example",
		"a-b.granted.test": "a-b.granted.test",
	}
	for in, want := range ok {
		got, err := Normalize(in)
		if err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{
		"", "127.0.0.1", "[::1]", "::1", "0x7f.1", "2130706433", "10.0.0.1",
		"example.com:443", "http://example.com", "https://example.com/", "example.com/path",
		"*.example.com", "user@example.com", "exa mple.com", "a..b", "intranet", "localhost",
		"app.localhost", "ex%41mple.com", strings.Repeat("a", 250) + ".com",
	} {
		if got, err := Normalize(bad); err == nil || !errors.Is(err, ErrInvalidHost) {
			t.Errorf("Normalize(%q) = %q, %v; want an ErrInvalidHost", bad, got, err)
		}
	}
}

func TestSetDecide(t *testing.T) {
	pol, err := policy.Parse([]string{"allowed.test;port.test:8443"}, []string{"blocked.test;*.evil.test"})
	if err != nil {
		t.Fatal(err)
	}
	var s Set
	for _, h := range []string{"granted.test", "blocked.test", "x.evil.test", "port.test"} {
		if added, err := s.Add(h, "test", time.Now()); !added || err != nil {
			t.Fatalf("Add(%s) = %v, %v", h, added, err)
		}
	}
	if added, err := s.Add("granted.test", "again", time.Now()); added || err != nil {
		t.Errorf("a second Add of the same host = %v, %v; want false, nil", added, err)
	}
	cases := []struct {
		url  string
		want bool
	}{
		{"https://granted.test/x", true},
		{"ws://granted.test:8080/", true}, // a grant is a host, any port
		{"https://sub.granted.test/", false},
		{"https://other.test/", false},
		{"https://blocked.test/", false}, // --block wins over a grant
		{"https://x.evil.test/", false},
		{"http://port.test:80/", true}, // covered by an entry on another port: the grant opens it
		{"https://allowed.test/", true},
		{"file:///etc/passwd", false},
		{"chrome://settings", false},
		{"http://127.0.0.1/", false},
		{"not a url", false},
	}
	for _, c := range cases {
		d := s.Decide(pol.Decide(c.url))
		if d.Allowed != c.want {
			t.Errorf("%s: allowed=%v (%s); want %v", c.url, d.Allowed, d.Reason, c.want)
		}
	}
	if d := s.Decide(pol.DecideHost("granted.test", 443)); !d.Allowed || !strings.Contains(d.Reason, "granted") {
		t.Errorf("DecideHost(granted.test): %+v", d)
	}
	if d := s.Decide(pol.DecideHost("blocked.test", 443)); d.Allowed {
		t.Errorf("DecideHost(blocked.test) allowed by a grant: %+v", d)
	}
	var nilSet *Set
	if d := nilSet.Decide(pol.Decide("https://granted.test/")); d.Allowed {
		t.Error("a nil Set granted something")
	}
	empty, _ := policy.Parse(nil, nil)
	if d := s.Decide(empty.Decide("https://granted.test/")); !d.Allowed {
		t.Errorf("with an empty allowlist a grant should still apply: %+v", d)
	}
	if got := s.Hosts(); len(got) != 4 || got[0] != "granted.test" {
		t.Errorf("Hosts() = %v", got)
	}
	s.Close()
	if d := s.Decide(pol.Decide("https://granted.test/")); d.Allowed {
		t.Error("a closed Set still grants")
	}
	if added, err := s.Add("late.test", "test", time.Now()); added || err == nil {
		t.Errorf("Add after Close = %v, %v; want an error", added, err)
	}
	if len(s.List()) != 0 {
		t.Errorf("List after Close = %v", s.List())
	}
}

func TestSetConcurrent(t *testing.T) {
	var s Set
	pol, _ := policy.Parse([]string{"allowed.test"}, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				h := "h" + string(rune('a'+i)) + ".test"
				if j%2 == 0 {
					_, _ = s.Add(h, "test", time.Now())
				}
				_ = s.Decide(pol.Decide("https://" + h + "/"))
				_ = s.List()
			}
		}()
	}
	wg.Wait()
	if n := len(s.List()); n != 8 {
		t.Errorf("%d grants, want 8", n)
	}
}
