package cdpmsg

import (
	"bytes"
	"errors"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that nothing in the package leaves goroutines behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// FuzzDecode checks that Decode never panics, that its errors wrap
// ErrMalformed, and that whatever it accepts survives re-encoding with the
// Append functions: the result decodes to the same id, method and sessionId.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"id":1,"method":"Browser.getVersion"}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		e, err := Decode(msg)
		if err != nil {
			if !errors.Is(err, ErrMalformed) || e != nil {
				t.Fatalf("Decode(%q) = %v, %v", msg, e, err)
			}
			return
		}
		dirty := Envelope{ID: 99, HasID: true, Method: "Stale.method", SessionID: "stale"}
		if err := DecodeInto(msg, &dirty); err != nil || dirty.ID != e.ID || dirty.HasID != e.HasID ||
			dirty.Method != e.Method || dirty.SessionID != e.SessionID {
			t.Fatalf("DecodeInto(%q) into a used Envelope = %+v, %v; Decode gave %+v", msg, dirty, err, e)
		}
		if e.HasID && e.ID < 0 {
			t.Fatalf("Decode(%q) accepted id %d", msg, e.ID)
		}
		var out []byte
		switch {
		case e.HasID && e.Method != "":
			out = AppendCommand(nil, e.ID, e.SessionID, e.Method, e.Params)
		case e.HasID:
			out = AppendResponse(nil, e.ID, e.SessionID, e.Result, e.Error)
		case e.Method != "":
			out = AppendEvent(nil, e.SessionID, e.Method, e.Params)
		}
		if out != nil {
			g, err := Decode(out)
			if err != nil {
				t.Fatalf("re-encoding of %q is not decodable: %q: %v", msg, out, err)
			}
			if g.HasID != e.HasID || g.ID != e.ID || g.Method != e.Method || g.SessionID != e.SessionID {
				t.Fatalf("re-encoding of %q gives %+v, want %+v", msg, g, e)
			}
			if e.Method != "" && !bytes.Equal(g.Params, e.Params) {
				t.Fatalf("params of %q changed: %q", msg, g.Params)
			}
		}
		id := int64(-1)
		if e.HasID {
			id = e.ID
		}
		errMsg := AppendError(nil, id, e.SessionID, CodeServerError, "cdpguard: "+e.Method)
		g, err := Decode(errMsg)
		if err != nil || g.HasID != e.HasID || g.ID != e.ID || g.SessionID != e.SessionID || len(g.Error) == 0 {
			t.Fatalf("error reply for %q = %q (%v)", msg, errMsg, err)
		}
	})
}
