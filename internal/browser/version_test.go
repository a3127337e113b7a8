package browser

import "testing"

// TestParseVersion: Browser.getVersion's names map to /json/version's.
func TestParseVersion(t *testing.T) {
	v := ParseVersion([]byte(`{"protocolVersion":"1.3","product":"Chrome/156","revision":"@abc","userAgent":"UA","jsVersion":"15.6"}`))
	want := Version{Browser: "Chrome/156", ProtocolVersion: "1.3", UserAgent: "UA", V8Version: "15.6", WebKitVersion: "@abc"}
	if v != want {
		t.Fatalf("got %+v, want %+v", v, want)
	}
	if (ParseVersion([]byte("not json")) != Version{}) {
		t.Fatal("an unreadable reply gave a version")
	}
}
