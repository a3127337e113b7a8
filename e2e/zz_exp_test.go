package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/headed"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

func TestZZExp(t *testing.T) {
	path := needHeaded(t)
	d := headed.StartXvfb(t)
	h := testhosts.Start(t)
	c := headed.StartChromium(t, d, path, "--host-resolver-rules=MAP *.test 127.0.0.1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// order log of everything on the direct connection
	var mu sync.Mutex
	var order []string
	ws, _ := cdptest.BrowserURL(ctx, c.URL, nil)
	cl, err := cdptest.Dial(ctx, ws, cdptest.Options{OnMessage: func(m *cdptest.Message) {
		mu.Lock()
		defer mu.Unlock()
		if m.Method == "Runtime.bindingCalled" {
			order = append(order, "B")
		} else if m.ID >= 1000 {
			order = append(order, fmt.Sprintf("R%d", m.ID))
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	target, gs, err := headed.OpenPage(ctx, cl, h.PageURL("/human.html"))
	if err != nil {
		t.Fatal(err)
	}
	_ = target
	must := func(v any, err error) any {
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	must(cl.Call(ctx, gs, "Runtime.enable", nil))
	must(cl.Call(ctx, gs, "Runtime.addBinding", map[string]any{"name": "gb", "executionContextName": "gw"}))
	must(cl.Call(ctx, gs, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": `document.addEventListener('click', e => gb(JSON.stringify({t: e.isTrusted, a: navigator.userActivation.isActive})), true); //SECRETMARK`, "worldName": "gw", "runImmediately": true}))
	must(nil, headed.Navigate(ctx, cl, gs, h.PageURL("/human.html")))
	// agent session
	as, err := headed.AttachPage(ctx, cl, target)
	if err != nil {
		t.Fatal(err)
	}
	bind, stop := cl.Subscribe(gs, "Runtime.bindingCalled")
	defer stop()
	// 1: ordering of Input response vs bindingCalled
	raw := cl.Conn()
	for i := 0; i < 40; i++ {
		for j, typ := range []string{"mousePressed", "mouseReleased"} {
			b, _ := json.Marshal(map[string]any{"id": 1000 + i*2 + j, "sessionId": as, "method": "Input.dispatchMouseEvent", "params": map[string]any{"type": typ, "x": 320, "y": 190, "button": "left", "clickCount": 1}})
			_ = raw.Write(ctx, 1, b)
		}
		time.Sleep(30 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	t.Logf("order: %s", strings.Join(order, " "))
	mu.Unlock()
	n := 0
drain:
	for {
		select {
		case v := <-bind:
			if n < 2 {
				t.Logf("binding: %s", v)
			}
			n++
		default:
			break drain
		}
	}
	t.Logf("%d bindingCalled", n)
	// 1b: sequential, timing
	for i := 0; i < 10; i++ {
		_, _ = cl.Call(ctx, as, "Input.dispatchMouseEvent", map[string]any{"type": "mousePressed", "x": 320, "y": 190, "button": "left", "clickCount": 1})
		_, _ = cl.Call(ctx, as, "Input.dispatchMouseEvent", map[string]any{"type": "mouseReleased", "x": 320, "y": 190, "button": "left", "clickCount": 1})
		t0 := time.Now()
		select {
		case <-bind:
			t.Logf("binding %v after the release response", time.Since(t0))
		case <-time.After(time.Second):
			t.Logf("no binding")
		}
	}
}
