package fetchdomain

import (
	"testing"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// responsePaused is a Fetch.requestPaused at the response stage with the
// given status.
func responsePaused(id, url string, status int, text string) []byte {
	b, _ := jsonv2.Marshal(map[string]any{
		"requestId": id, "frameId": "F", "resourceType": "Document",
		"request":            map[string]any{"url": url, "method": "GET", "headers": map[string]string{}},
		"responseStatusCode": status, "responseStatusText": text,
		"responseHeaders": []map[string]string{{"name": "Content-Type", "value": "text/plain"}},
	})
	return b
}

// TestNetErrorsAskForTheResponse: with NetErrors an allowed http:// request
// is continued asking for its response; https:// and the judge without
// NetErrors are not.
func TestNetErrorsAskForTheResponse(t *testing.T) {
	for _, c := range []struct {
		url       string
		netErrors bool
		want      bool
	}{
		{"http://allowed.test/x", true, true},
		{"HTTP://allowed.test/x", true, true},
		{"https://allowed.test/x", true, false},
		{"http://allowed.test/x", false, false},
	} {
		s := &fakeSender{}
		j, stop := newJudge(t, s, Options{NetErrors: c.netErrors})
		j.Paused("S", paused("R1", c.url, "Image", "", nil))
		got := s.waitN(t, 1)[0]
		stop()
		if got.method != "Fetch.continueRequest" || (got.params["interceptResponse"] == true) != c.want {
			t.Errorf("%s (NetErrors %v): %s %v, want interceptResponse %v", c.url, c.netErrors, got.method, got.params, c.want)
		}
	}
}

// TestNetErrorsFailMarkedResponses: a response the proxy marked is failed
// with the reason it names; an unmarked one, or one with a reason the judge
// does not know, goes on unchanged.
func TestNetErrorsFailMarkedResponses(t *testing.T) {
	for _, c := range []struct {
		status      int
		text        string
		want, error string
	}{
		{502, "cdpguard net error ConnectionRefused", "Fetch.failRequest", "ConnectionRefused"},
		{502, "cdpguard net error NameNotResolved", "Fetch.failRequest", "NameNotResolved"},
		{502, "cdpguard net error Bogus", "Fetch.continueResponse", ""},
		{200, "cdpguard net error ConnectionRefused", "Fetch.continueResponse", ""},
		{502, "Bad Gateway", "Fetch.continueResponse", ""},
		{200, "OK", "Fetch.continueResponse", ""},
	} {
		s := &fakeSender{}
		j, stop := newJudge(t, s, Options{NetErrors: true})
		j.Paused("S", responsePaused("R1", "http://allowed.test/", c.status, c.text))
		got := s.waitN(t, 1)[0]
		stop()
		reason, _ := got.params["errorReason"].(string)
		if got.method != c.want || reason != c.error || got.params["requestId"] != "R1" {
			t.Errorf("%d %q: %s %v, want %s %q", c.status, c.text, got.method, got.params, c.want, c.error)
		}
	}
}

// TestNetErrorsChromeErrorResponse: a response-stage pause with Chrome's
// own network error (no response came) is answered once, with
// Fetch.continueRequest, which Chrome takes at either stage.
func TestNetErrorsChromeErrorResponse(t *testing.T) {
	s := &fakeSender{}
	j, stop := newJudge(t, s, Options{NetErrors: true})
	defer stop()
	b, _ := jsonv2.Marshal(map[string]any{
		"requestId": "R1", "frameId": "F", "resourceType": "Document",
		"request":             map[string]any{"url": "http://allowed.test/", "method": "GET", "headers": map[string]string{}},
		"responseErrorReason": "ConnectionReset",
	})
	j.Paused("S", b)
	got := s.waitN(t, 1)[0]
	if got.method != "Fetch.continueRequest" || got.params["requestId"] != "R1" || got.params["errorReason"] != nil {
		t.Errorf("a response-stage pause with Chrome's error got %s %v, want Fetch.continueRequest", got.method, got.params)
	}
}
