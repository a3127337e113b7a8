package firewall

import "testing"

func TestTable(t *testing.T) {
	cases := []struct {
		method  string
		browser bool
		want    Action
	}{
		{"Target.exposeDevToolsProtocol", false, Refuse},
		{"Fetch.enable", true, Refuse},
		{"Fetch.enable", false, Pass},
		{"Fetch.continueRequest", true, Refuse},
		{"Fetch.continueRequest", false, CheckPolicy},
		{"Browser.crash", true, Refuse},
		{"Browser.crashGpuProcess", true, Refuse},
		{"Browser.executeBrowserCommand", true, Refuse},
		{"Extensions.loadUnpacked", true, Refuse},
		{"Tethering.bind", true, Refuse},
		{"PWA.install", true, Refuse},
		{"Page.navigate", false, CheckURL},
		{"Target.createTarget", true, CheckURL},
		{"Network.loadNetworkResource", false, CheckURL},
		{"Browser.close", true, Rewrite},
		{"Page.handleJavaScriptDialog", false, Rewrite},
		{"Guard.getPolicy", true, Guard},
		{"Runtime.evaluate", false, Pass},
		{"Fetch.continueRequest", false, CheckPolicy},
		{"Brand.newMethod", false, Pass},
		{"Fetch", true, Pass},
	}
	for _, c := range cases {
		r, _ := Lookup(c.method, c.browser)
		if r.Action != c.want {
			t.Errorf("Lookup(%q, browser=%v) = %v, want %v", c.method, c.browser, r.Action, c.want)
		}
		if r.Action != Pass && r.Why == "" {
			t.Errorf("%s: rule without a reason", c.method)
		}
	}
	for _, u := range []string{"file:///etc/passwd", "FILE:///x", "chrome://version", " view-source:http://a", "devtools://devtools/x", "javascript:alert(1)"} {
		if ForbiddenScheme(u) == "" {
			t.Errorf("ForbiddenScheme(%q) = \"\"", u)
		}
	}
	for _, u := range []string{"http://a.test/", "about:blank", "data:text/html,x", "https://x"} {
		if s := ForbiddenScheme(u); s != "" {
			t.Errorf("ForbiddenScheme(%q) = %q", u, s)
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Lookup("Runtime.evaluate", false)
	}
}
