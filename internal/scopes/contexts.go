package scopes

import (
	"context"
	"errors"
	"fmt"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/users"
)

// Create makes the browser context of a user's new session
// (users.Contexts): the session's own proxy listener first (Open), the
// context pointed at it, then its download behavior, so that no download
// lands in Chrome's default place before an agent sets a behavior of its
// own (Deps.Downloads: deny, or the user's own directory).
func (t *Table) Create(ctx context.Context, key string) (string, error) {
	sc, err := t.Open(key)
	if err != nil {
		return "", err
	}
	res, err := t.d.Browser.Call(ctx, "", "Target.createBrowserContext", t.contextParams(nil, sc))
	if err != nil {
		sc.Close()
		return "", err
	}
	var r struct {
		BrowserContextID string `json:"browserContextId"`
	}
	if err := jsonv2.Unmarshal(res, &r); err != nil || r.BrowserContextID == "" {
		sc.Close()
		return "", fmt.Errorf("createBrowserContext: bad reply %s", res)
	}
	t.Bind(r.BrowserContextID, sc)
	p, err := t.d.Files.Defaults(key, r.BrowserContextID)
	if err == nil {
		_, err = t.d.Browser.Call(ctx, "", "Browser.setDownloadBehavior", p)
	}
	if err != nil {
		_ = t.Dispose(ctx, r.BrowserContextID)
		return "", fmt.Errorf("set the download behavior of a new context: %w", err)
	}
	return r.BrowserContextID, nil
}

// Dispose disposes a user's browser context (users.Contexts); a user's
// primary context ends the session's grants and listener (End).
func (t *Table) Dispose(ctx context.Context, id string) error {
	t.End(id)
	_, err := t.d.Browser.Call(ctx, "", "Target.disposeBrowserContext", map[string]any{"browserContextId": id})
	return err
}

// ContextParams returns the Target.createBrowserContext params of a
// context user u creates besides their own (isolation.Options): the
// agent's params in with the proxy settings of u's session. An agent's own
// proxy settings never get this far (the firewall table refuses them).
func (t *Table) ContextParams(u *users.User, in map[string]jsonv2.Value) (map[string]any, error) {
	sc := t.OfUser(u)
	if sc == nil || (t.proxy() != nil && sc.ProxyURL() == "") {
		return nil, errors.New("this user's session has no egress proxy listener")
	}
	return t.contextParams(in, sc), nil
}

// contextParams returns in with the proxy settings of the session sc (its
// own listener, judged with its grants), when there is an egress proxy.
func (t *Table) contextParams(in map[string]jsonv2.Value, sc *Scope) map[string]any {
	out := map[string]any{}
	for k, v := range in {
		out[k] = v
	}
	if t.proxy() != nil {
		out["proxyServer"] = sc.ProxyURL()
		out["proxyBypassList"] = "<-loopback>"
	}
	return out
}

// proxy returns the egress proxy, nil when there is none.
func (t *Table) proxy() Proxy {
	if t.d.Proxy == nil {
		return nil
	}
	return t.d.Proxy()
}
