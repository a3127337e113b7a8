package egress

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
)

// e2eTunLink is the tun link the e2e WebRTC suite adds to the namespace all
// test packages share (e2e/sidechannel_netns_test.go, tunName): its other end
// is a file that test holds, not a network, so it does not count as a way
// out. Seen as "up", it failed this package in CI while that suite ran.
const e2eTunLink = "cdpgtun0"

// chromiumPath finds the browser, or skips (fails under CDPGUARD_E2E=1).
func chromiumPath(t *testing.T) string {
	t.Helper()
	e2e := os.Getenv("CDPGUARD_E2E") == "1"
	path, err := exec.LookPath("chromium")
	if err != nil {
		if e2e {
			t.Fatalf("CDPGUARD_E2E=1 but chromium not found: %v", err)
		}
		t.Skip("chromium not found; set CDPGUARD_E2E=1 to make this a failure")
	}
	// A browser test must not be able to reach the real network.
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Name == e2eTunLink {
			continue
		}
		if i.Flags&net.FlagLoopback == 0 && i.Flags&net.FlagUp != 0 {
			msg := "interface " + i.Name + " is up: run inside `unshare --net sh -c 'ip link set lo up && go test ...'`"
			if e2e {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return path
}

const probePage = `<!doctype html><title>probe</title><script>
function wsProbe(u) {
  return new Promise(res => {
    let ws;
    try { ws = new WebSocket(u); } catch (e) { res('throw:' + e); return; }
    const t = setTimeout(() => res('timeout'), 4000);
    ws.onopen = () => ws.send('ping');
    ws.onmessage = e => { clearTimeout(t); ws.close(); res('msg:' + e.data); };
    ws.onerror = () => { clearTimeout(t); res('error'); };
  });
}
</script>`

// TestChromiumWebSocketGoesThroughProxy shows that with the proxy flags the
// design prescribes, Chrome resolves no names itself and sends WebSockets as
// CONNECT: ws://evil.test never reaches its listener, ws://allowed.test does.
func TestChromiumWebSocketGoesThroughProxy(t *testing.T) {
	chrome := chromiumPath(t)

	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ws" {
			w.Header().Set("Content-Type", "text/html")
			_, _ = fmt.Fprint(w, probePage)
			return
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx, cancel := context.WithTimeout(r.Context(), waitBound)
		defer cancel()
		if typ, msg, err := c.Read(ctx); err == nil {
			_ = c.Write(ctx, typ, msg)
			_, _, _ = c.Read(ctx)
		}
	}))
	defer allowed.Close()
	var evilHits atomic.Int64
	evil := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprint(w, "evil")
	}))
	evil.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			evilHits.Add(1)
		}
	}
	evil.Start()
	defer evil.Close()
	aPort := itoa(allowed.Listener.Addr().(*net.TCPAddr).Port)
	ePort := itoa(evil.Listener.Addr().(*net.TCPAddr).Port)

	res := newResolver()
	var mu sync.Mutex
	var refused []string
	_, proxyAddr := startProxy(t, Options{
		Decide:   newAllow("allowed.test").decide,
		HostMap:  testMap(t),
		Resolver: res,
		OnRefuse: func(r Refusal) {
			mu.Lock()
			refused = append(refused, r.Method+" "+hostPort(r.Host, r.Port))
			mu.Unlock()
		},
	})

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("proxy-server", "http://"+proxyAddr),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	if err := chromedp.Do(bctx, chromedp.Navigate("http://allowed.test:"+aPort+"/")); err != nil {
		t.Fatalf("navigate to allowed page through the proxy: %v", err)
	}
	probe := func(u string) string {
		out, err := chromedp.Run(bctx, chromedp.Evaluate[string](fmt.Sprintf("wsProbe(%q)", u), chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("probe %s: %v", u, err)
		}
		return out
	}
	if got := probe("ws://allowed.test:" + aPort + "/ws"); got != "msg:ping" {
		t.Errorf("allowed WebSocket: %s", got)
	}
	for _, u := range []string{"ws://evil.test:" + ePort + "/ws", "ws://127.0.0.1:" + ePort + "/ws", "ws://localhost:" + ePort + "/ws"} {
		if got := probe(u); got == "msg:ping" {
			t.Errorf("%s connected", u)
		}
	}
	fetched, _ := chromedp.Run(bctx, chromedp.Evaluate[string](
		`fetch('http://evil.test:`+ePort+`/').then(r => r.text()).catch(e => 'error')`, chromedp.EvalAwaitPromise))
	if fetched == "evil" {
		t.Error("fetch reached evil.test")
	}

	if n := evilHits.Load(); n != 0 {
		t.Errorf("evil listener saw %d connections", n)
	}
	mu.Lock()
	got := strings.Join(refused, "; ")
	mu.Unlock()
	if !strings.Contains(got, "CONNECT evil.test:"+ePort) || !strings.Contains(got, "CONNECT 127.0.0.1:"+ePort) {
		t.Errorf("proxy refusals %q: expected CONNECTs for evil.test and 127.0.0.1 (Chrome must not bypass or resolve)", got)
	}
	for _, h := range []string{"allowed.test", "evil.test"} {
		if n := res.count(h); n != 0 {
			t.Errorf("resolver asked for %s %d times; the host map should answer", h, n)
		}
	}
	t.Logf("proxy refusals: %s", got)
}
