package cdpguard

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
	dto "github.com/prometheus/client_model/go"

	"github.com/cdpguard/cdpguard/internal/policystate"
	"github.com/cdpguard/cdpguard/internal/users"
)

// TestPolicyFileConfig: with PolicyFile, Allow, Block and Instructions are
// refused (one source), a bad file stops start-up naming the line, and a
// groupHeader equal to the session header is refused.
func TestPolicyFileConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	writeFile(t, good, "allow: [allowed.test]\n")
	for _, cfg := range []Config{
		{PolicyFile: good, Allow: []string{"x.test"}},
		{PolicyFile: good, Block: []string{"x.test"}},
		{PolicyFile: good, Instructions: "hi"},
	} {
		_, err := newGuard(cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, ErrSetup) || !strings.Contains(ce.Reason, "put allow, block and instructions in the policy file") {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
	if g, err := newGuard(Config{PolicyFile: good, Allow: []string{""}, Block: []string{" "}}); err != nil {
		t.Errorf("empty Allow and Block (an empty ALLOWED_ORIGINS) must not compete with the file: %v", err)
	} else {
		_ = g.Close()
	}
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "allow:\n  - allowed.test\n  - \"no such/entry\"\n")
	if _, err := newGuard(Config{PolicyFile: bad}); !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("bad file: %v", err)
	}
	same := filepath.Join(dir, "same.yaml")
	writeFile(t, same, "allow: []\ngroupHeader: x-librechat-user\ngroups:\n  a: {allow: [a.test]}\n")
	var ce *ConfigError
	if _, err := newGuard(Config{PolicyFile: same}); !errors.As(err, &ce) || ce.Field != "PolicyFile" {
		t.Errorf("groupHeader = session header: %v", err)
	}
}

// TestPolicyReload: a good file replaces the policy every layer reads; a
// bad one changes nothing and is counted; SetPolicy is refused with a file.
func TestPolicyReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, "allow: [one.test]\ninstructions: first\n")
	g, err := newGuard(Config{PolicyFile: path})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Close() }()
	view := func(key string) map[string]any {
		t.Helper()
		b, err := jsonv2.Marshal(g.pol.View(key, g.cfg.SearchURL, nil))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := jsonv2.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if !g.decideFor(nil, "https://one.test/").Allowed || view("")["instructions"] != "first" {
		t.Fatal("the file's policy is not in force")
	}
	writeFile(t, path, "allow: [two.test]\ninstructions: second\n")
	if err := g.ReloadPolicy(); err != nil {
		t.Fatal(err)
	}
	if g.decideFor(nil, "https://one.test/").Allowed || !g.decideFor(nil, "https://two.test/").Allowed || view("")["instructions"] != "second" {
		t.Fatal("the reloaded policy is not in force")
	}
	if p, ins := g.rulesForFrame("any-frame"); !p.Decide("https://two.test/").Allowed || ins != "second" {
		t.Error("the Fetch judge's rules are not the reloaded ones")
	}
	writeFile(t, path, "allow: [three.test]\nalow: [typo.test]\n")
	if err := g.ReloadPolicy(); !errors.Is(err, ErrPolicyFile) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("bad file: %v", err)
	}
	if !g.decideFor(nil, "https://two.test/").Allowed || g.decideFor(nil, "https://three.test/").Allowed {
		t.Error("a bad file changed the policy")
	}
	var m dto.Metric
	if err := g.metrics.PolicyReloads.WithLabelValues("error").Write(&m); err != nil || m.GetCounter().GetValue() != 1 {
		n := m.GetCounter().GetValue()
		t.Errorf("error reloads counted %v, want 1", n)
	}
	if err := g.SetPolicy([]string{"x.test"}, nil, ""); !errors.Is(err, ErrPolicyFile) {
		t.Errorf("SetPolicy with a policy file: %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := g.ReloadPolicy(); err == nil || !g.decideFor(nil, "https://two.test/").Allowed {
		t.Errorf("a missing file: %v, and the policy must stay", err)
	}
}

// TestSetPolicy: a library user without a file changes the policy in place.
func TestSetPolicy(t *testing.T) {
	g, err := newGuard(Config{Allow: []string{"one.test"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Close() }()
	var ce *ConfigError
	if err := g.SetPolicy([]string{"bad entry"}, nil, ""); !errors.As(err, &ce) {
		t.Errorf("bad entry: %v", err)
	}
	if err := g.SetPolicy([]string{"two.test"}, []string{"ads.two.test"}, "ask"); err != nil {
		t.Fatal(err)
	}
	if g.decideFor(nil, "https://one.test/").Allowed || !g.decideFor(nil, "https://two.test/").Allowed || g.decideFor(nil, "https://ads.two.test/").Allowed {
		t.Error("SetPolicy is not in force")
	}
	if err := g.ReloadPolicy(); !errors.Is(err, ErrPolicyFile) {
		t.Errorf("ReloadPolicy without a file: %v", err)
	}
}

// TestGroupKeys: the group header selects a group that becomes part of
// the user's key; unknown groups get the default or are refused; a
// session value cannot pose as another group's user.
func TestGroupKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	writeFile(t, path, "allow: [public.test]\ngroupHeader: X-Group\ngroups:\n  staff: {allow: [wiki.test]}\n")
	g, err := newGuard(Config{PolicyFile: path})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Close() }()
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	key, err := g.keyOf(hdr("X-LibreChat-User", "alice", "X-Group", "staff"))
	if err != nil || key != "alice\x00staff" || policystate.GroupOfKey(key) != "staff" {
		t.Fatalf("staff key %q, %v", key, err)
	}
	if !g.policyOf(key).Decide("https://wiki.test/").Allowed || g.policyOf(key).Decide("https://public.test/").Allowed {
		t.Error("staff's policy is not staff's list")
	}
	// Before the user has a browser context (no registered user), the MCP
	// tools' and the reader's checks still judge by the key's group.
	if d := g.decideForKey(key, nil, "https://wiki.test/"); !d.Allowed {
		t.Errorf("staff's first navigation to wiki.test, before any context: %s", d.Reason)
	}
	if msg := g.readRefusal(key, nil, "https://wiki.test/"); msg != "" {
		t.Errorf("staff's first read of wiki.test, before any context: %s", msg)
	}
	if d := g.decideForKey(key, nil, "https://public.test/"); d.Allowed {
		t.Error("staff reached the default group's public.test before any context")
	}
	if key, err := g.keyOf(hdr("X-LibreChat-User", "bob", "X-Group", "nobody")); err != nil || key != "bob" {
		t.Errorf("unknown group, default: %q, %v", key, err)
	}
	if _, err := g.keyOf(hdr("X-LibreChat-User", "a\x00staff")); !errors.Is(err, ErrGroupRefused) {
		t.Errorf("a NUL in the session value: %v", err)
	}
	writeFile(t, path, "allow: [public.test]\ngroupHeader: X-Group\nunknownGroup: refuse\ngroups:\n  staff: {allow: [wiki.test]}\n")
	if err := g.ReloadPolicy(); err != nil {
		t.Fatal(err)
	}
	for _, h := range []http.Header{hdr("X-LibreChat-User", "bob", "X-Group", "nobody"), hdr("X-LibreChat-User", "bob")} {
		if _, err := g.keyOf(h); !errors.Is(err, ErrGroupRefused) || !strings.Contains(err.Error(), "staff") {
			t.Errorf("unknown group, refuse: %v", err)
		}
	}
	// A group a reload removed refuses everything for its remaining users.
	writeFile(t, path, "allow: [public.test]\ngroupHeader: X-Group\nunknownGroup: refuse\ngroups:\n  other: {allow: [other.test]}\n")
	if err := g.ReloadPolicy(); err != nil {
		t.Fatal(err)
	}
	if g.policyOf(key).Decide("https://wiki.test/").Allowed || g.policyOf(key).Decide("https://public.test/").Allowed {
		t.Error("a removed group's user kept a policy")
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeContexts makes browser contexts without a browser.
type fakeContexts struct{}

func (fakeContexts) Create(_ context.Context, key string) (string, error) {
	return "ctx-" + strings.ReplaceAll(key, "\x00", "/"), nil
}
func (fakeContexts) Dispose(context.Context, string) error { return nil }

// TestAcquireUserOneGroup: once a session has a context in one group, a
// context in another is refused even when keyOf's check was passed (two
// racing first requests), and the refused context is disposed at once.
func TestAcquireUserOneGroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, "allow: [public.test]\ngroupHeader: X-Group\ngroups:\n  staff: {allow: [wiki.test]}\n")
	g, err := newGuard(Config{PolicyFile: path})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Close() }()
	g.users = users.New(fakeContexts{}, g.pages, time.Hour, g.log)
	ctx := context.Background()
	staff, err := g.acquireUser(ctx, policystate.GroupKey("alice", "staff"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.users.Release(staff)
	// keyOf was passed before staff's context existed; Acquire now finds it.
	if _, err := g.acquireUser(ctx, policystate.GroupKey("alice", "")); !errors.Is(err, ErrGroupRefused) {
		t.Fatalf("a second group's context: %v", err)
	}
	if g.users.Lookup("alice") != nil {
		t.Error("the refused context was kept")
	}
	if g.users.Lookup(policystate.GroupKey("alice", "staff")) == nil {
		t.Error("the first group's context was lost")
	}
	if _, err := g.keyOf(http.Header{"X-Librechat-User": {"alice"}}); !errors.Is(err, ErrGroupRefused) {
		t.Errorf("keyOf for another group mid-life: %v", err)
	}
	if _, err := g.acquireUser(ctx, policystate.GroupKey("bob", "")); err != nil {
		t.Errorf("another session: %v", err)
	}
}

// TestRelaunchKeepsLastPolicy: a policy file broken while the guard ran
// (refused by the reload, the old policy kept) does not stop the browser's
// relaunch: the relaunched guard keeps the policy in force before, as a
// reload would; a first start with that file still fails.
func TestRelaunchKeepsLastPolicy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writeFile(t, path, "allow: [one.test]\n")
	g, err := newGuard(Config{PolicyFile: path})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Close() }()
	writeFile(t, path, "allow: [one.test]\nalow: [typo.test]\n")
	if _, err := newGuard(Config{PolicyFile: path}); err == nil {
		t.Fatal("a first start took a broken policy file")
	}
	next, err := newGuardWith(Config{PolicyFile: path}, launchOptions{lastPolicy: g.rules()})
	if err != nil {
		t.Fatalf("relaunch with a broken file: %v", err)
	}
	defer func() { _ = next.Close() }()
	if !next.policyOf("").Decide("https://one.test/").Allowed {
		t.Error("the relaunched guard lost the policy in force before")
	}
}
