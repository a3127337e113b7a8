package readpage

import (
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/grants"
	"github.com/cdpguard/cdpguard/internal/policy"
)

// TestRefusal: a read is refused by the policy (naming the reachable
// origins), lets a session grant through, refuses the guard's own
// addresses and URLs no agent may open.
func TestRefusal(t *testing.T) {
	p, err := policy.Parse([]string{"a.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	self := func(d policy.Decision, url string) policy.Decision {
		if strings.Contains(url, ":9222") {
			return policy.Decision{Reason: fetchdomain.ReasonSelf, Host: d.Host}
		}
		return d
	}
	if msg := Refusal(p, nil, "https://a.test/", self); msg != "" {
		t.Errorf("allowed host refused: %s", msg)
	}
	if msg := Refusal(p, nil, "https://b.test/", self); !strings.Contains(msg, "Reachable origins: a.test") {
		t.Errorf("refused host: %q", msg)
	}
	var g grants.Set
	if _, err := g.Add("b.test", "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	if msg := Refusal(p, &g, "https://b.test/", self); msg != "" {
		t.Errorf("granted host refused: %s", msg)
	}
	if msg := Refusal(p, nil, "http://a.test:9222/json", self); !strings.Contains(msg, fetchdomain.ReasonSelf) {
		t.Errorf("the guard's own address: %q", msg)
	}
	if msg := Refusal(p, nil, "http://a.test:9222/json", nil); msg != "" {
		t.Errorf("no self check asked for: %q", msg)
	}
	if msg := Refusal(p, nil, "file:///etc/passwd", self); msg == "" || strings.HasPrefix(msg, "cdpguard: ") {
		t.Errorf("file URL: %q", msg)
	}
	empty, _ := policy.Parse(nil, nil)
	if msg := Refusal(empty, nil, "https://a.test/", nil); !strings.Contains(msg, "none (the allowlist is empty)") {
		t.Errorf("empty allowlist: %q", msg)
	}
}
