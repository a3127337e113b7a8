package firewall

import (
	"testing"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// TestFirewallPermissions: local-network permissions are never granted;
// setting one to "denied" passes.
func TestFirewallPermissions(t *testing.T) {
	refused := []map[string]any{
		{"permissions": []string{"geolocation", "localNetworkAccess"}},
		{"permissions": []string{"loopbackNetwork"}},
		{"permissions": []string{"localNetwork"}},
		{"permission": map[string]any{"name": "local-network-access"}, "setting": "granted"},
		{"permission": map[string]any{"name": "loopback-network"}, "setting": "prompt"},
	}
	for _, p := range refused {
		why := LocalNetworkGrant(mustJSON(t, p))
		if why == "" {
			t.Errorf("%v was not refused", p)
		}
	}
	passed := []map[string]any{
		{"permissions": []string{"geolocation", "notifications"}},
		{"permission": map[string]any{"name": "local-network-access"}, "setting": "denied"},
		{"permission": map[string]any{"name": "geolocation"}, "setting": "granted"},
	}
	for _, p := range passed {
		if why := LocalNetworkGrant(mustJSON(t, p)); why != "" {
			t.Errorf("%v refused: %s", p, why)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := jsonv2.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRefusalLabel: a refusal counts under its row's name only when that
// row refuses on its own; otherwise, and for methods without a row, under
// "isolation".
func TestRefusalLabel(t *testing.T) {
	for _, c := range []struct {
		method  string
		browser bool
		want    string
	}{
		{"Target.openDevTools", false, "Target.openDevTools"},
		{"Fetch.disable", true, "Fetch.*"},
		{"Page.enable", false, "isolation"},
		{"Target.attachToTarget", true, "isolation"},
	} {
		if got := RefusalLabel(c.method, c.browser); got != c.want {
			t.Errorf("RefusalLabel(%s, %v) = %q, want %q", c.method, c.browser, got, c.want)
		}
	}
}
