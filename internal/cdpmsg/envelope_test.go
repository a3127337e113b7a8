package cdpmsg

import (
	"errors"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

func TestDecode(t *testing.T) {
	good := []struct {
		in      string
		id      int64
		hasID   bool
		method  string
		session string
		params  string
	}{
		{`{"id":1,"method":"Browser.getVersion"}`, 1, true, "Browser.getVersion", "", ""},
		{`{"id":0,"method":"A.b","params":{"x":[1,2]},"sessionId":"S1"}`, 0, true, "A.b", "S1", `{"x":[1,2]}`},
		{`{"method":"Page.loadEventFired","params":{"timestamp":1.5}}`, 0, false, "Page.loadEventFired", "", `{"timestamp":1.5}`},
		{`{"id":7,"result":{},"sessionId":"AB"}`, 7, true, "", "AB", ""},
	}
	for _, g := range good {
		e, err := Decode([]byte(g.in))
		if err != nil {
			t.Fatalf("Decode(%s): %v", g.in, err)
		}
		if e.ID != g.id || e.HasID != g.hasID || e.Method != g.method || e.SessionID != g.session || string(e.Params) != g.params {
			t.Errorf("Decode(%s) = %+v", g.in, e)
		}
	}
	bad := []string{
		``, `{`, `[]`, `{"id":1,"id":2,"method":"A.b"}`,
		`{"id":1,"method":"A.b","params":{"a":1,"a":2}}`,
		"{\"id\":1,\"method\":\"A.\xff\"}",
		`{"id":-1,"method":"A.b"}`, `{"id":1.5,"method":"A.b"}`, `{"id":"1","method":"A.b"}`,
		`{"id":99999999999999999999,"method":"A.b"}`, `{"id":1,"method":5}`,
	}
	for _, b := range bad {
		if _, err := Decode([]byte(b)); !errors.Is(err, ErrMalformed) {
			t.Errorf("Decode(%q) err = %v, want ErrMalformed", b, err)
		}
	}
}

func TestAppendRoundTrip(t *testing.T) {
	msgs := [][]byte{
		AppendCommand(nil, 5, "S\"1", "Runtime.evaluate", []byte(`{"expression":"1"}`)),
		AppendResponse(nil, 9, "", []byte(`{"a":1}`), nil),
		AppendResponse(nil, 9, "S", nil, nil),
		AppendEvent(nil, "S", "Target.attachedToTarget", []byte(`{}`)),
		AppendError(nil, 3, "", CodeServerError, "cdpguard: refused \"x\"\n"),
		AppendError(nil, -1, "", CodeParseError, "bad \xff"),
	}
	for _, m := range msgs {
		var v map[string]any
		if err := jsonv2.Unmarshal(m, &v); err != nil {
			t.Errorf("%s: %v", m, err)
		}
	}
	if s := string(AppendString(nil, "a\x01\\")); s != `"a\u0001\\"` {
		t.Errorf("AppendString = %s", s)
	}
	if !strings.Contains(string(msgs[0]), `"sessionId":"S\"1"`) {
		t.Errorf("command = %s", msgs[0])
	}
}

func BenchmarkDecodeCommand(b *testing.B) {
	msg := []byte(`{"id":123,"method":"Runtime.evaluate","params":{"expression":"document.title","returnByValue":true},"sessionId":"8C1F3B0E4D5A6B7C8D9E0F1A2B3C4D5E"}`)
	var e Envelope
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := DecodeInto(msg, &e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeScreenshot(b *testing.B) {
	data := strings.Repeat("QUJD", 1<<20) // 4 MiB of base64
	msg := []byte(`{"id":9,"result":{"data":"` + data + `"},"sessionId":"8C1F3B0E"}`)
	var e Envelope
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := DecodeInto(msg, &e); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRefusal(t *testing.T) {
	if got := Refusal("Browser.crash", "it would kill the browser"); got != "cdpguard: Browser.crash is refused: it would kill the browser" {
		t.Errorf("Refusal = %q", got)
	}
	if got := Refusal("", "a command needs an id"); got != "cdpguard: a command needs an id" {
		t.Errorf("Refusal without method = %q", got)
	}
}
