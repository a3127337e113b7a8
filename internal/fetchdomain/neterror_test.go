package fetchdomain

import (
	"testing"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// responsePaused is a Fetch.requestPaused at the response stage with the
// given response headers.
func responsePaused(id, url string, status int, headers map[string]string) []byte {
	var hs []map[string]string
	for k, v := range headers {
		hs = append(hs, map[string]string{"name": k, "value": v})
	}
	b, _ := jsonv2.Marshal(map[string]any{
		"requestId": id, "frameId": "F", "resourceType": "Document",
		"request":            map[string]any{"url": url, "method": "GET", "headers": map[string]string{}},
		"responseStatusCode": status, "responseHeaders": hs,
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
		headers     map[string]string
		want, error string
	}{
		{502, map[string]string{"X-Cdpguard-Net-Error": "ConnectionRefused"}, "Fetch.failRequest", "ConnectionRefused"},
		{502, map[string]string{"x-cdpguard-net-error": "NameNotResolved"}, "Fetch.failRequest", "NameNotResolved"},
		{502, map[string]string{"X-Cdpguard-Net-Error": "Bogus"}, "Fetch.continueResponse", ""},
		{502, map[string]string{"Content-Type": "text/plain"}, "Fetch.continueResponse", ""},
		{200, nil, "Fetch.continueResponse", ""},
	} {
		s := &fakeSender{}
		j, stop := newJudge(t, s, Options{NetErrors: true})
		j.Paused("S", responsePaused("R1", "http://allowed.test/", c.status, c.headers))
		got := s.waitN(t, 1)[0]
		stop()
		reason, _ := got.params["errorReason"].(string)
		if got.method != c.want || reason != c.error || got.params["requestId"] != "R1" {
			t.Errorf("%d %v: %s %v, want %s %q", c.status, c.headers, got.method, got.params, c.want, c.error)
		}
	}
}
