package e2e

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// chromedpScenarios runs the differential scenarios with chromedp against
// the endpoint at url and returns what chromedp observed, keyed
// "chromedp/<scenario>".
func chromedpScenarios(t *testing.T, url string, srv *diffServer) map[string]json.RawMessage {
	t.Helper()
	bctx := connect(t, url)
	out := map[string]json.RawMessage{}
	for _, sc := range []struct {
		name string
		run  func(tab context.Context) (any, error)
	}{
		{"version", func(tab context.Context) (any, error) {
			v, err := chromedp.Call(tab, browser.GetVersion, cdp.Empty{})
			return map[string]string{"product": v.Product, "protocolVersion": v.ProtocolVersion}, err
		}},
		{"dialog-accept", func(tab context.Context) (any, error) {
			return dialogScenario(tab, `confirm("sure?")`, page.HandleJavaScriptDialogParams{Accept: true}, 0)
		}},
		{"dialog-dismiss", func(tab context.Context) (any, error) {
			return dialogScenario(tab, `confirm("sure?")`, page.HandleJavaScriptDialogParams{Accept: false}, 0)
		}},
		{"dialog-prompt", func(tab context.Context) (any, error) {
			return dialogScenario(tab, `prompt("name?", "default")`, page.HandleJavaScriptDialogParams{Accept: true, PromptText: "typed text"}, 0)
		}},
		{"dialog-late-accept", func(tab context.Context) (any, error) {
			return dialogScenario(tab, `confirm("too late?")`, page.HandleJavaScriptDialogParams{Accept: true}, diffGrace+700*time.Millisecond)
		}},
		{"nav-blocked-host", func(tab context.Context) (any, error) {
			resp, err := chromedp.RunResponse(tab, chromedp.Navigate(srv.blocked()+"/page"))
			if err != nil {
				return nil, err
			}
			return map[string]int64{"status": resp.Status}, nil
		}},
		{"nav-refused-scheme", func(tab context.Context) (any, error) {
			_, err := chromedp.RunResponse(tab, chromedp.Navigate("file:///etc/hostname"))
			return map[string]any{"error": errString(err)}, nil
		}},
		{"download", func(tab context.Context) (any, error) {
			return chromedpDownload(t, tab, srv)
		}},
		{"screenshot", func(tab context.Context) (any, error) {
			if err := chromedp.Do(tab, chromedp.EmulateViewport(640, 480), chromedp.Navigate(srv.base()+"/page")); err != nil {
				return nil, err
			}
			buf, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
			if err != nil || len(buf) < 24 {
				return nil, err
			}
			return map[string]any{"png": string(buf[1:4]) == "PNG", "width": binary.BigEndian.Uint32(buf[16:]), "height": binary.BigEndian.Uint32(buf[20:])}, nil
		}},
		{"pdf", func(tab context.Context) (any, error) {
			if err := chromedp.Do(tab, chromedp.Navigate(srv.base()+"/page")); err != nil {
				return nil, err
			}
			res, err := chromedp.Call(tab, page.PrintToPDF, page.PrintToPDFParams{})
			return map[string]bool{"pdf": err == nil && len(res.Data) > 5 && string(res.Data[:5]) == "%PDF-"}, err
		}},
	} {
		start := time.Now()
		tab, cancelTab := chromedp.NewContext(bctx)
		sctx, cancel := context.WithTimeout(tab, 15*time.Second)
		var obs any
		var err error
		if err = chromedp.Do(tab); err == nil {
			obs, err = sc.run(sctx)
		}
		if err != nil {
			obs = map[string]string{"error": err.Error()}
		}
		cancel()
		cancelTab()
		b, _ := json.Marshal(obs)
		out["chromedp/"+sc.name] = b
		t.Logf("chromedp/%s against %s: %v", sc.name, url, time.Since(start).Round(time.Millisecond))
	}
	return out
}

// chromedpOne runs one scenario with chromedp against the endpoint at url.
func chromedpOne(t *testing.T, url string, run func(tab context.Context) (any, error)) json.RawMessage {
	t.Helper()
	bctx := connect(t, url)
	tab, cancelTab := chromedp.NewContext(bctx)
	defer cancelTab()
	sctx, cancel := context.WithTimeout(tab, 15*time.Second)
	defer cancel()
	var obs any
	err := chromedp.Do(tab)
	if err == nil {
		obs, err = run(sctx)
	}
	if err != nil {
		obs = map[string]string{"error": err.Error()}
	}
	b, _ := json.Marshal(obs)
	return b
}

// dialogScenario evaluates expr (which opens a dialog) and answers the
// dialog with answer after delay, from a second goroutine as chromedp's
// own example does.
func dialogScenario(tab context.Context, expr string, answer page.HandleJavaScriptDialogParams, delay time.Duration) (any, error) {
	if err := chromedp.Do(tab, chromedp.Navigate("about:blank")); err != nil {
		return nil, err
	}
	lctx, stop := context.WithCancel(tab)
	defer stop()
	answered := make(chan error, 1)
	dialogs := chromedp.Events(lctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				answered <- err
				return
			}
			time.Sleep(delay)
			_, err := chromedp.Call(tab, page.HandleJavaScriptDialog, answer)
			answered <- err
			return
		}
	}()
	result, err := chromedp.Run(tab, chromedp.Evaluate[any](expr))
	if err != nil {
		return nil, err
	}
	obs := map[string]any{"result": result}
	if delay > 0 {
		select {
		case err := <-answered:
			obs["acceptError"] = errString(err)
		case <-time.After(delay + 5*time.Second):
			obs["acceptError"] = "pending"
		}
	}
	return obs, nil
}

// chromedpDownload allows downloads with events on the tab's session,
// clicks a download link and reports how the download ended.
func chromedpDownload(t *testing.T, tab context.Context, srv *diffServer) (any, error) {
	if _, err := chromedp.Call(tab, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: t.TempDir(), EventsEnabled: new(true),
	}); err != nil {
		return nil, err
	}
	lctx, stop := context.WithCancel(tab)
	defer stop()
	ended := make(chan string, 1)
	progress := chromedp.Events(lctx, browser.DownloadProgress)
	go func() {
		for ev, err := range progress {
			if err != nil {
				return
			}
			if ev.State != browser.DownloadProgressStateInProgress {
				ended <- string(ev.State)
				return
			}
		}
	}()
	if err := chromedp.Do(tab, chromedp.Navigate(srv.base()+"/dlpage"), chromedp.Click(chromedp.CSS("#dl"))); err != nil {
		return nil, err
	}
	select {
	case s := <-ended:
		return map[string]string{"state": s}, nil
	case <-time.After(10 * time.Second):
		return map[string]string{"state": "no end within 10s"}, nil
	}
}

func errString(err error) any {
	if err == nil {
		return nil
	}
	return err.Error()
}
