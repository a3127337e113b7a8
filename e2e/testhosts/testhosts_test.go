package testhosts

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// client reaches the hosts by name without DNS, as the browser does through
// its host-resolver rules.
func client() *http.Client {
	d := &net.Dialer{Timeout: 2 * time.Second}
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("get %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", u, err)
	}
	return resp, string(b)
}

func TestCounters(t *testing.T) {
	h := Start(t)
	c := client()

	if _, body := get(t, c, h.Forbidden.Origin()+HitPath("x")); !strings.Contains(body, ForbiddenBody) {
		t.Errorf("forbidden body = %q", body)
	}
	if got := h.Forbidden.Hits("/hit/x"); got != 1 {
		t.Errorf("forbidden hits = %d, want 1", got)
	}
	if got := h.Forbidden.Conns(); got < 1 {
		t.Errorf("forbidden conns = %d, want >= 1", got)
	}

	// A bare TCP connect counts as a connection with no request.
	h.Forbidden.Reset()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(h.Forbidden.IPOrigin(), "http://"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	deadline := time.Now().Add(2 * time.Second)
	for h.Forbidden.Conns() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s := h.Forbidden.Snapshot(); s.Conns != 1 || s.Total != 0 {
		t.Errorf("after bare connect: %+v, want 1 conn, 0 requests", s)
	}

	get(t, c, h.Sink.Origin()+HitPath("y"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := h.Sink.WaitHits(ctx, HitPath("y"), 1); err != nil {
		t.Error(err)
	}
}

func TestPagesAndRedirect(t *testing.T) {
	h := Start(t)
	c := client()
	vu := h.VectorURL("img", h.Forbidden.Origin(), "n1")
	resp, body := get(t, c, vu)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "/vector/common.js") {
		t.Fatalf("vector page: %d %q", resp.StatusCode, body)
	}
	u, err := url.Parse(vu)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Query().Get("target"); got != h.Forbidden.Origin() {
		t.Errorf("target = %q", got)
	}
	for _, p := range []string{"/vector/common.js", "/vector/worker.js", "/page.html", "/popup.html", "/dialogs.html"} {
		if resp, _ := get(t, c, h.PageURL(p)); resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d", p, resp.StatusCode)
		}
	}
	to := h.Forbidden.Origin() + HitPath("r")
	resp, _ = get(t, c, h.PageURL("/redirect?to="+url.QueryEscape(to)))
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != to {
		t.Errorf("redirect: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if h.Forbidden.Total() != 0 {
		t.Errorf("forbidden saw %v", h.Forbidden.Log())
	}
}
