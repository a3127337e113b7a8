package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestTaskChecks: the task bench reads refs and table rows off both
// servers' outlines, as they print them (no browser: the bench itself is
// `go run ./e2e/bench -workloads=tasks`).
func TestTaskChecks(t *testing.T) {
	r := &taskRun{texts: []string{
		// @playwright/mcp 0.0.86: YAML, a line quoted when its name has ": ".
		"```yaml\n- 'link \"River Tours Ltd: member offers\" [ref=f9e31] [cursor=pointer]':\n  - /url: /x\n- row [ref=f2e9]:\n  - cell \"Lyon\" [ref=f2e10]\n  - cell \"France\" [ref=f2e11]\n  - cell \"522,250\" [ref=f2e12]\n```",
		// cdpguard's /mcp.
		"- searchbox \"Search terms\" [ref=e12]\n- button \"Search\" [ref=e18]\nLyon | France | 522,250 | 48",
	}}
	for _, c := range []struct{ role, name, want string }{
		{"link", "River Tours Ltd", "f9e31"},
		{"searchbox", "Search terms", "e12"},
		{"button", "Search", "e18"},
	} {
		if got, err := r.ref(c.role, c.name); err != nil || got != c.want {
			t.Errorf("ref(%s %q) = %q, %v; want %s", c.role, c.name, got, err, c.want)
		}
	}
	if _, err := r.ref("button", "Pricing"); err == nil {
		t.Error("ref of a missing button found one")
	}
	if !r.seenNear("Lyon", "522,250") {
		t.Error("the Lyon row was not read with its population")
	}
	if r.seenNear("522,250", "Lyon") || r.seenNear("Lyon", "873,076") {
		t.Error("seenNear matched a value that is not after the city")
	}
}

// TestTaskSite: the fixtures are served with the site's header and the
// forbidden origin put in, and the login sets the cookie the orders page
// needs.
func TestTaskSite(t *testing.T) {
	s, err := startTaskSite()
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	// *.test is the browsers' host map; the test dials loopback itself.
	addr := strings.TrimPrefix(s.base, "http://"+siteHost)
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, "127.0.0.1"+addr)
	}}
	defer tr.CloseIdleConnections()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Transport: tr, Jar: jar, Timeout: 10 * time.Second}
	get := func(u string) string {
		t.Helper()
		res, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = res.Body.Close() }()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	if b := get(s.url("blocked.html")); !strings.Contains(b, `href="`+s.blockedOrigin+`/offers"`) || !strings.Contains(b, "Riverside Gazette") || strings.Contains(b, "<!--HEADER-->") {
		t.Errorf("blocked.html:\n%s", b)
	}
	if b := get(s.url("orders")); strings.Contains(b, taskOrderID) {
		t.Error("the orders page answered without the cookie")
	}
	res, err := c.PostForm(s.url("login"), url.Values{"user": {"ada"}, "password": {"otter-2026"}})
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if b := get(s.url("orders")); !strings.Contains(b, taskOrderID) {
		t.Errorf("orders after the login:\n%s", b)
	}
	if b := get(s.url("long")); !strings.Contains(b, taskLongFact) || len(b) < 50_000 {
		t.Errorf("long page: %d bytes, fact there: %v", len(b), strings.Contains(b, taskLongFact))
	}
	if n := s.blockedReqs.Load() + s.blockedConns.Load(); n != 0 {
		t.Errorf("the forbidden listener saw %d hits", n)
	}
}
