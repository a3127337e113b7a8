package firewall

import "testing"

func TestFirewallNotWeb(t *testing.T) {
	for _, c := range []struct {
		typ, url string
		web      bool
	}{
		{"page", "http://allowed.test/", true},
		{"page", "", true},
		{"page", "about:blank", true},
		{"iframe", "https://x.test/f", true},
		{"worker", "blob:http://allowed.test/1234", true},
		{"service_worker", "http://allowed.test/sw.js", true},
		{"shared_worker", "data:text/javascript,1", true},
		{"tab", "http://allowed.test/", true},
		{"browser_ui", "chrome://omnibox-popup.top-chrome/", false},
		{"browser_ui", "http://allowed.test/", false},
		{"webview", "chrome://newtab/", false},
		{"other", "about:blank", false},
		{"brand_new_type", "http://allowed.test/", false},
		{"page", "chrome://settings/", false},
		{"page", "chrome-untrusted://print/", false},
		{"page", "devtools://devtools/bundled/inspector.html", false},
		{"page", "chrome-extension://abc/popup.html", false},
		{"page", "chrome-search://local-ntp/", false},
		{"page", "CHROME://settings", false},
		{"page", "view-source:http://allowed.test/", false},
		{"page", "file:///etc/passwd", false},
	} {
		why := NotWeb(c.typ, c.url)
		if (why == "") != c.web {
			t.Errorf("NotWeb(%q, %q) = %q, want web=%v", c.typ, c.url, why, c.web)
		}
	}
}
