package cdpguard

import (
	"context"
	"fmt"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/scopes"
)

// browserContexts creates and disposes the contexts the guard gives users.
// Every one of them gets the egress proxy, when there is one.
type browserContexts struct{ g *Guard }

func (b browserContexts) Create(ctx context.Context, key string) (string, error) {
	sc, err := b.g.scopes.Open(key) // the user's own proxy listener (internal/scopes)
	if err != nil {
		return "", err
	}
	res, err := b.g.mux.Call(ctx, "", "Target.createBrowserContext", b.g.contextParams(nil, sc))
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
	b.g.scopes.Bind(r.BrowserContextID, sc)
	// No download may land in Chrome's default place before an agent sets a
	// behavior of its own: deny, or the user's own directory.
	p, err := b.g.files.Defaults(key, r.BrowserContextID)
	if err == nil {
		_, err = b.g.mux.Call(ctx, "", "Browser.setDownloadBehavior", p)
	}
	if err != nil {
		_ = b.Dispose(ctx, r.BrowserContextID)
		return "", fmt.Errorf("set the download behavior of a new context: %w", err)
	}
	return r.BrowserContextID, nil
}

func (b browserContexts) Dispose(ctx context.Context, id string) error {
	b.g.scopes.End(id) // a user's primary context: the session's grants end
	_, err := b.g.mux.Call(ctx, "", "Target.disposeBrowserContext", map[string]any{"browserContextId": id})
	return err
}

// contextParams returns Target.createBrowserContext params with the proxy
// settings of the user's session sc (its own listener, judged with its
// grants); an agent's own proxy settings never get this far.
func (g *Guard) contextParams(in map[string]jsonv2.Value, sc *scopes.Scope) map[string]any {
	out := map[string]any{}
	for k, v := range in {
		out[k] = v
	}
	if g.proxyURL != "" {
		out["proxyServer"] = sc.ProxyURL()
		out["proxyBypassList"] = "<-loopback>"
	}
	return out
}
