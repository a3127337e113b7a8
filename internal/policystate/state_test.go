package policystate

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/policyfile"
)

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fromFile returns a State reading path, with its counts and changes.
func fromFile(t *testing.T, path string) (*State, reloads, *atomic.Int32) {
	t.Helper()
	s, sum, err := policyfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	counts := NewReloadsCounter(prometheus.NewRegistry())
	changes := new(atomic.Int32)
	st := New(s, sum, Deps{File: path, Poll: 10 * time.Millisecond,
		Reloads:  counts,
		OnChange: func() { changes.Add(1) },
	})
	return st, reloads{counts}, changes
}

// reloads reads the reload counter by result.
type reloads struct{ c *prometheus.CounterVec }

func (r reloads) of(result string) int {
	var m dto.Metric
	_ = r.c.WithLabelValues(result).Write(&m)
	return int(m.GetCounter().GetValue())
}

func allows(st *State, key, url string) bool { return st.PolicyOf(key).Decide(url).Allowed }

// TestReload: a good file is put in force and OnChange runs; a bad one
// changes nothing, is counted as an error and wraps ErrPolicyFile; Set is
// refused while a file is the policy's source.
func TestReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	write(t, path, "allow: [one.test]\n")
	st, counts, changes := fromFile(t, path)
	write(t, path, "allow: [two.test]\n")
	if err := st.Reload("test"); err != nil || !allows(st, "", "https://two.test/") || allows(st, "", "https://one.test/") {
		t.Fatalf("reload: %v", err)
	}
	if changes.Load() != 1 || counts.of("ok") != 1 {
		t.Errorf("after a change: changes %d counts %v", changes.Load(), counts)
	}
	if err := st.Reload("again"); err != nil || changes.Load() != 1 || counts.of("ok") != 2 {
		t.Errorf("a reload without change: %v, changes %d counts %v", err, changes.Load(), counts)
	}
	write(t, path, "allow:\n  - \"no such/entry\"\n")
	if err := st.Reload("bad"); !errors.Is(err, ErrPolicyFile) || !allows(st, "", "https://two.test/") || counts.of("error") != 1 {
		t.Errorf("a bad file: %v, counts %v", err, counts)
	}
	if err := st.Set(policyfile.Static(nil, ""), "set"); !errors.Is(err, ErrPolicyFile) || !allows(st, "", "https://two.test/") {
		t.Errorf("Set with a file: %v", err)
	}
}

// TestSetWithoutFile: without a file, Set is in force at once and Reload
// is refused.
func TestSetWithoutFile(t *testing.T) {
	st := New(policyfile.Static(nil, ""), [32]byte{}, Deps{})
	p, err := policy.Parse([]string{"x.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Set(policyfile.Static(p, "hi"), "set"); err != nil || !allows(st, "", "https://x.test/") || st.Group("").Instructions != "hi" {
		t.Errorf("Set: %v", err)
	}
	if err := st.Reload("r"); !errors.Is(err, ErrPolicyFile) {
		t.Errorf("Reload without a file: %v", err)
	}
	var none *State
	if none.Rules() == nil || allows(none, "", "https://x.test/") {
		t.Error("a nil State must hold an empty policy that refuses everything")
	}
}

// TestWatchAndReloadRace: the watcher and explicit reloads (SIGHUP) race
// over a file rewritten many times; whatever the interleaving, once the
// writes end and a last reload ran, the last file written is in force (no
// older reading put in force after a newer one).
func TestWatchAndReloadRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	write(t, path, "allow: [h0.test]\n")
	st, _, _ := fromFile(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); st.Watch(ctx) }()
	var wg sync.WaitGroup
	stopReload := make(chan struct{})
	wg.Add(1)
	go func() { // SIGHUPs
		defer wg.Done()
		for {
			select {
			case <-stopReload:
				return
			default:
				_ = st.Reload("sighup")
			}
		}
	}()
	last := ""
	for i := 1; i <= 50; i++ {
		last = "h" + strings.Repeat("x", i) + ".test"
		tmp := path + ".tmp"
		write(t, tmp, "allow: ["+last+"]\n")
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	close(stopReload)
	wg.Wait()
	// A last reload reads the last file; a watcher's reload after it
	// reads the same file.
	if err := st.Reload("last"); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if !allows(st, "", "https://"+last+"/") {
		t.Fatalf("the last file written is not in force: %v", st.Rules().Default().Policy.Origins())
	}
}

// TestKeyOf: without groups the key is the session; with them the group
// joins it, an unknown group is refused when the file says so, a NUL in
// the session is refused, and a live context in another group refuses.
func TestKeyOf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	write(t, path, "allow: [public.test]\ngroupHeader: X-Group\nunknownGroup: refuse\ngroups:\n  staff: {allow: [wiki.test]}\n")
	st, _, _ := fromFile(t, path)
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	key, err := st.KeyOf(h("X-User", "alice", "X-Group", "staff"), "X-User", nil)
	if err != nil || key != GroupKey("alice", "staff") || GroupOfKey(key) != "staff" || !allows(st, key, "https://wiki.test/") || allows(st, key, "https://public.test/") {
		t.Fatalf("staff: %q %v", key, err)
	}
	if _, err := st.KeyOf(h("X-User", "bob", "X-Group", "nobody"), "X-User", nil); !errors.Is(err, ErrGroupRefused) {
		t.Errorf("unknown group: %v", err)
	}
	if _, err := st.KeyOf(h("X-User", "a\x00staff"), "X-User", nil); !errors.Is(err, ErrGroupRefused) {
		t.Errorf("NUL: %v", err)
	}
	live := func(k string) bool { return k == GroupKey("carol", "staff") }
	if _, err := st.KeyOf(h("X-User", "carol"), "X-User", live); !errors.Is(err, ErrGroupRefused) || !strings.Contains(err.Error(), "staff") {
		t.Errorf("another group live: %v", err)
	}
	if p, _ := st.ForFrame("F", func(string) (string, bool) { return key, true }); !p.Decide("https://wiki.test/").Allowed {
		t.Error("ForFrame must judge a frame by its owner's group")
	}
	if p, _ := st.ForFrame("F", func(string) (string, bool) { return "", false }); p.Decide("https://wiki.test/").Allowed {
		t.Error("ForFrame must judge a frame nobody owns by the default group")
	}
}
