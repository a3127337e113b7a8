package cdpmsg

import (
	"errors"
	"testing"
)

// TestDecodeBrowserLoneSurrogate: a message from the browser holding a
// lone UTF-16 surrogate escaped, as Chrome writes a page's string cut
// inside an emoji, is decoded (the reply or event is not lost), and so
// is an attach whose target's title holds one (the session is booked);
// an agent's message stays held to strict JSON.
func TestDecodeBrowserLoneSurrogate(t *testing.T) {
	reply := []byte(`{"id":3,"result":{"result":{"type":"string","value":"x\ud800y"}}}`)
	e, err := DecodeBrowser(reply)
	if err != nil || !e.HasID || e.ID != 3 {
		t.Fatalf("a reply holding a lone surrogate: %v %+v", err, e)
	}
	if _, err := Decode(reply); !errors.Is(err, ErrMalformed) {
		t.Errorf("Decode (an agent's message) took a lone surrogate: %v", err)
	}
	attach := []byte(`{"method":"Target.attachedToTarget","params":{"sessionId":"S1","targetInfo":{"targetId":"T1","type":"page","title":"\udc00","url":"about:blank","attached":true,"canAccessOpener":false},"waitingForDebugger":true}}`)
	e, err = DecodeBrowser(attach)
	if err != nil {
		t.Fatalf("an attach holding a lone surrogate: %v", err)
	}
	e.DecodeSessions()
	if e.Attached == nil || e.Attached.SessionID != "S1" || !e.Attached.WaitingForDebugger {
		t.Errorf("an attach whose title holds a lone surrogate is not booked: %+v", e.Attached)
	}
}
