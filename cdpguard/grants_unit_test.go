package cdpguard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/users"
)

// TestEgressListenConfig: --egress-listen takes loopback addresses only,
// and a bad one stops start-up with a ConfigError naming the field.
func TestEgressListenConfig(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:0", "127.0.0.1:8899", "[::1]:8899", "localhost:8899"} {
		if err := checkEgressListen(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"0.0.0.0:8899", ":8899", "[::]:8899", "10.0.0.1:8899", "example.com:8899", "127.0.0.1", "nonsense"} {
		var ce *ConfigError
		if err := checkEgressListen(bad); !errors.As(err, &ce) || ce.Field != "EgressListen" {
			t.Errorf("%s: %v, want a ConfigError for EgressListen", bad, err)
		}
	}
	_, err := Launch(context.Background(), Config{EgressListen: "0.0.0.0:1"})
	var ce *ConfigError
	if !errors.As(err, &ce) || !errors.Is(err, ErrSetup) {
		t.Errorf("Launch with a non-loopback EgressListen: %v", err)
	}
}

// TestDecideForGrants: the guard's judge of URLs an agent names applies
// the policy, then the user's session grants (never over a block entry,
// never another user's, not once the session ended). The scopes
// themselves are tested in internal/scopes.
func TestDecideForGrants(t *testing.T) {
	g, err := newGuard(Config{Allow: []string{"allowed.test"}, Block: []string{"*.blocked.test"}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.stop()
	sc, err := g.scopes.Open("u") // no proxy: grants only
	if err != nil {
		t.Fatal(err)
	}
	g.scopes.Bind("CTX", sc)
	u := &users.User{Key: "u", Primary: "CTX"}
	for _, h := range []string{"a.test", "x.blocked.test"} {
		if _, err := sc.Grants().Add(h, "test", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if d := g.decideFor(u, "https://a.test/"); !d.Allowed {
		t.Errorf("decideFor with the grant: %+v", d)
	}
	if d := g.decideFor(u, "https://x.blocked.test/"); d.Allowed {
		t.Errorf("decideFor let a blocked host through: %+v", d)
	}
	if d := g.decideFor(&users.User{Key: "v", Primary: "OTHER"}, "https://a.test/"); d.Allowed {
		t.Errorf("another user got u's grant: %+v", d)
	}
	if d := g.decideForKey("u", nil, "https://a.test/"); d.Allowed {
		t.Errorf("a user without a context got grants: %+v", d)
	}
	g.scopes.End("CTX")
	if d := g.decideFor(u, "https://a.test/"); d.Allowed {
		t.Errorf("an ended session's grant still applies: %+v", d)
	}
}

// TestGrantsEndWithBrowser: a relaunched browser is a new guard, so every
// grant (users' and the default context's) is forgotten, and the shared
// egress listener comes back on its fixed --egress-listen address.
func TestGrantsEndWithBrowser(t *testing.T) {
	needBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fixed := l.Addr().String()
	_ = l.Close()
	s, err := Supervise(ctx, Config{EgressListen: fixed}, SupervisorOptions{MaxFailures: 3, Window: time.Minute, Backoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first := s.current()
	u, err := first.users.Acquire(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.scopes.OfUser(u).Grants().Add("a.test", "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := first.scopes.Default().Grants().Add("b.test", "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	first.users.Release(u)
	if err := syscall.Kill(first.proc.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(30 * time.Second); !s.Ready() || s.current() == first; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("no relaunched browser within 30s")
		}
	}
	next := s.current()
	if next.proxyAddr != fixed {
		t.Errorf("the relaunched guard's shared listener is on %s, want the fixed %s", next.proxyAddr, fixed)
	}
	u2, err := next.users.Acquire(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	defer next.users.Release(u2)
	if got := next.scopes.OfUser(u2).Grants().Hosts(); len(got) != 0 {
		t.Errorf("user u's grants survived the relaunch: %v", got)
	}
	if got := next.scopes.Default().Grants().Hosts(); len(got) != 0 {
		t.Errorf("the default context's grants survived the relaunch: %v", got)
	}
	req, _ := http.NewRequest(http.MethodGet, s.URL()+"/policy", nil)
	req.Header.Set(DefaultSessionHeader, "u")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"grants":[]`) {
		t.Errorf("/policy for u after the relaunch: %s", b)
	}
}
