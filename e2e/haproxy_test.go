package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// lbUsers is how many users TestHAProxyScaleOut spreads over the instances.
const lbUsers = 10

// needHAProxy is needBrowser for Debian's haproxy (scripts/test.sh
// installs it).
func needHAProxy(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("haproxy")
	if err != nil {
		p, err = exec.LookPath("/usr/sbin/haproxy")
	}
	if err != nil {
		if strict() {
			t.Fatalf("CDPGUARD_E2E=1: haproxy not installed (apt-get install haproxy): %v", err)
		}
		t.Skipf("skipping: haproxy not installed: %v (set CDPGUARD_E2E=1 to fail instead)", err)
	}
	return p
}

// lbInstance is one `cdpguard serve` behind the load balancer.
type lbInstance struct {
	name string // its server name in deploy/haproxy/haproxy.cfg
	url  string // http://127.0.0.1:PORT
	srv  *served
	dead bool
}

// TestHAProxyScaleOut runs three `cdpguard serve` instances behind Debian's
// HAProxy with deploy/haproxy/haproxy.cfg unchanged (addresses from the
// environment): each of ten users lands on exactly one instance and finds
// its tab again on every reconnect; after one instance is SIGKILLed only
// its users move (to a fresh, empty context on a survivor) and everyone
// else keeps their tab; no instance ever reaches the forbidden listener,
// while every user's page reached the allowed sink (the control).
func TestHAProxyScaleOut(t *testing.T) {
	parallelSuite(t) // own browser and test hosts: runs beside the other heavy suites, to keep CI under 10 minutes
	chrome := needBrowser(t)
	if directMode() {
		t.Skip("scale-out behind a load balancer is cdpguard's; there is no direct-mode equivalent")
	}
	haproxy := needHAProxy(t)
	h := testhosts.Start(t)
	bin := buildCdpguard(t, t.TempDir())
	// One policy file for the fleet, as a ConfigMap gives every pod the same.
	policyPath := filepath.Join(t.TempDir(), "policy.yaml")
	writePolicyFile(t, policyPath, "allow: ["+testhosts.AllowedName+"]\n")

	insts := make([]*lbInstance, 3)
	for i := range insts {
		insts[i] = &lbInstance{name: fmt.Sprintf("cdpguard-%d", i+1),
			srv: startServed(t, exec.Command(bin, policyFileServeArgs(t, chrome, policyPath)...))}
	}
	for _, in := range insts {
		in.url = in.srv.listenURL(t)
		cdptest.WaitHTTP(t, in.url+"/readyz", "ok", 45*time.Second)
	}

	lbAddr := freeAddr(t)
	cmd := exec.Command(haproxy, "-db", "-f", filepath.Join("..", "deploy", "haproxy", "haproxy.cfg"))
	cmd.Env = append(os.Environ(), "CDPGUARD_LB_BIND="+lbAddr)
	for i, in := range insts {
		cmd.Env = append(cmd.Env, fmt.Sprintf("CDPGUARD_%d=%s", i+1, strings.TrimPrefix(in.url, "http://")))
	}
	lb := startServed(t, cmd)
	lbURL := "http://" + lbAddr
	cdptest.WaitHTTP(t, lbURL+"/readyz", "ok", 15*time.Second)

	users := make([]string, lbUsers)
	home := map[string]*lbInstance{}
	for i := range users {
		users[i] = fmt.Sprintf("lb-user-%d", i)
		visit(t, h, lbURL, users[i], "1")
	}
	for _, u := range users {
		home[u] = owner(t, insts, u, "1")
	}
	perInstance := map[string][]string{}
	for _, u := range users {
		perInstance[home[u].name] = append(perInstance[home[u].name], u)
	}
	t.Logf("users per instance: %v", perInstance)
	if len(perInstance) < 2 {
		t.Fatalf("all users hashed to one instance (%v): the kill below would prove nothing", perInstance)
	}

	// Reconnects (new HTTP requests and a new CDP connection each) find
	// the tab: the hash sends the user back to the same instance.
	for _, u := range users {
		if !listed(t, lbURL, u, "1") {
			t.Errorf("%s: tab missing from /json/list through the balancer", u)
		}
		if !cdpListed(t, lbURL, u, "1") {
			t.Errorf("%s: tab missing from Target.getTargets on a new connection through the balancer", u)
		}
	}

	fleetPolicyChange(t, insts, users, lbURL, policyPath)

	// Kill the instance with the most users.
	victim := insts[0]
	for _, in := range insts {
		if len(perInstance[in.name]) > len(perInstance[victim.name]) {
			victim = in
		}
	}
	_ = victim.srv.cmd.Process.Kill()
	select {
	case <-victim.srv.waited:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s not reaped within 10s", victim.name)
	}
	victim.dead = true
	waitLog(t, lb, "cdpguard/"+victim.name+" is DOWN", 15*time.Second)
	t.Logf("killed %s (users %v)", victim.name, perInstance[victim.name])

	for _, u := range users {
		if home[u] != victim {
			if !listed(t, lbURL, u, "1") {
				t.Errorf("%s (on %s, which lives) lost its tab when %s died", u, home[u].name, victim.name)
			}
			continue
		}
		// Moved: a fresh, empty context on a survivor, which then keeps it.
		if listed(t, lbURL, u, "1") {
			t.Errorf("%s: its tab from the dead %s is still listed", u, victim.name)
		}
		visit(t, h, lbURL, u, "2")
		if in := owner(t, insts, u, "2"); in == victim || in == nil {
			t.Errorf("%s: moved to %v", u, in)
		} else {
			t.Logf("%s moved from %s to %s", u, victim.name, in.name)
		}
		if !cdpListed(t, lbURL, u, "2") {
			t.Errorf("%s: new tab missing on reconnect after the move", u)
		}
	}
	for _, u := range users { // nobody else moved
		if home[u] != victim && owner(t, insts, u, "1") != home[u] {
			t.Errorf("%s moved off %s although it lives", u, home[u].name)
		}
	}

	// A real client through the balancer: chromedp reads /json/version
	// without the header, then dials with it.
	for _, u := range users {
		if home[u] != victim {
			bctx, cancel := connectUser(t, lbURL, u)
			if !containsUser(targetURLs(t, bctx), u) {
				t.Errorf("%s: chromedp through the balancer does not see its tab", u)
			}
			cancel() // Browser.close: closes this user's tabs, nobody else's
			break
		}
	}

	for _, u := range users { // the control: every page reached the allowed sink
		if h.Sink.Hits(testhosts.HitPath(u)) == 0 {
			t.Errorf("%s: its page never reached the allowed sink, so zero forbidden hits proves nothing", u)
		}
	}
	if n, c := h.Forbidden.Total(), h.Forbidden.Conns(); n != 0 || c != 0 {
		t.Errorf("forbidden listener saw %d requests and %d connections: %v", n, c, h.Forbidden.Log())
	}
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// waitLog waits until the process's output contains s.
func waitLog(t *testing.T, s *served, want string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if strings.Contains(s.out.String(), want) {
			return
		}
	}
	t.Fatalf("no %q in the output within %v:\n%s", want, d, s.out)
}

// tabURL is user's page for visit round (a query names both).
func tabURL(h *testhosts.Hosts, user, round string) string {
	return userURL(h, user) + "&round=" + round
}

// lbBrowserWS reads webSocketDebuggerUrl from /json/version with the user
// header, as Playwright's connectOverCDP does (user "": without it, as
// chromedp's remote allocator does).
func lbBrowserWS(t *testing.T, base, user string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/json/version", nil)
	if user != "" {
		req.Header.Set(userHeader, user)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /json/version: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var v struct {
		WS string `json:"webSocketDebuggerUrl"`
	}
	if err := json.Unmarshal(b, &v); err != nil || !strings.HasPrefix(v.WS, "ws"+strings.TrimPrefix(base, "http")+"/devtools/browser/") {
		t.Fatalf("/json/version through the balancer: %s %s (%v)", resp.Status, b, err)
	}
	return v.WS
}

// visit connects as user through the balancer, opens its page for round,
// fetches the allowed sink and the forbidden listener from it, and
// disconnects, leaving the tab open.
func visit(t *testing.T, h *testhosts.Hosts, base, user, round string) {
	t.Helper()
	a := cdptest.DialUser(t, lbBrowserWS(t, base, user), user, cdptest.Options{})
	defer func() { _ = a.Conn().Close(websocket.StatusNormalClosure, "") }()
	m, err := a.CallID(20*time.Second, 1, "", "Target.createTarget", map[string]any{"url": tabURL(h, user, round)})
	if err != nil {
		t.Fatalf("%s: %v", user, err)
	}
	var c struct{ TargetID string }
	_ = json.Unmarshal(m.Result, &c)
	m, err = a.CallID(20*time.Second, 2, "", "Target.attachToTarget", map[string]any{"targetId": c.TargetID, "flatten": true})
	if err != nil {
		t.Fatalf("%s: %v", user, err)
	}
	var s struct{ SessionID string }
	_ = json.Unmarshal(m.Result, &s)
	// Wait for the page (evaluations fail while it commits), then fetch
	// both hosts from it.
	loaded := fmt.Sprintf(`location.href.includes(%q) && document.readyState === "complete"`, "round="+round)
	for i, end := 10, time.Now().Add(20*time.Second); ; i++ {
		m, err = a.CallID(5*time.Second, i, s.SessionID, "Runtime.evaluate", map[string]any{"expression": loaded, "returnByValue": true})
		if err == nil && strings.Contains(string(m.Result), `"value":true`) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%s: page %s not loaded within 20s: %v %s", user, tabURL(h, user, round), err, m.Raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
	expr := fmt.Sprintf(`(async () => {
		const sink = await fetch(%q).then(r => r.ok, () => false);
		const evil = await fetch(%q).then(() => "reached", () => "blocked");
		return location.href.includes(%q) + "," + sink + "," + evil;
	})()`, h.Sink.Origin()+testhosts.HitPath(user), h.Forbidden.Origin()+testhosts.HitPath(user), "round="+round)
	m, err = a.CallID(30*time.Second, 3, s.SessionID, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true})
	if err != nil {
		t.Fatalf("%s: %v", user, err)
	}
	var r struct{ Result struct{ Value string } }
	_ = json.Unmarshal(m.Result, &r)
	if r.Result.Value != "true,true,blocked" {
		t.Errorf("%s round %s: page loaded, sink reached, forbidden blocked = %q, want true,true,blocked (%s)", user, round, r.Result.Value, m.Raw)
	}
}

// listed reports whether /json/list at base, as user, shows its round tab.
func listed(t *testing.T, base, user, round string) bool {
	t.Helper()
	code, urls, body := getList(t, base, user)
	if code != http.StatusOK {
		t.Fatalf("%s /json/list as %s: %d %s", base, user, code, body)
	}
	return slices.ContainsFunc(urls, func(u string) bool { return isTab(u, user, round) })
}

func isTab(u, user, round string) bool {
	return strings.Contains(u, "user="+url.QueryEscape(user)+"&round="+round)
}

// owner returns the one live instance whose /json/list shows user's round
// tab when asked directly (nil, and an error, if none or several do).
func owner(t *testing.T, insts []*lbInstance, user, round string) *lbInstance {
	t.Helper()
	var found []*lbInstance
	for _, in := range insts {
		if !in.dead && listed(t, in.url, user, round) {
			found = append(found, in)
		}
	}
	if len(found) != 1 {
		t.Errorf("%s round %s: tab on %d instances, want exactly 1", user, round, len(found))
		return nil
	}
	return found[0]
}

// cdpListed opens a new CDP connection as user through the balancer and
// reports whether Target.getTargets shows its round tab. The connection
// reads /json/version without the header, as chromedp does, so it often
// comes from another instance than the WebSocket's.
func cdpListed(t *testing.T, base, user, round string) bool {
	t.Helper()
	ws := lbBrowserWS(t, base, "")
	a := cdptest.DialUser(t, ws, user, cdptest.Options{})
	defer func() { _ = a.Conn().Close(websocket.StatusNormalClosure, "") }()
	m, err := a.CallID(10*time.Second, 1, "", "Target.getTargets", nil)
	if err != nil {
		t.Fatalf("%s: %v", user, err)
	}
	var r struct{ TargetInfos []struct{ URL string } }
	_ = json.Unmarshal(m.Result, &r)
	return slices.ContainsFunc(r.TargetInfos, func(ti struct{ URL string }) bool { return isTab(ti.URL, user, round) })
}
