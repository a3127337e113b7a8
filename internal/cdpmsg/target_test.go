package cdpmsg

import "testing"

// TestDecodeSessions: the two session events are decoded into Attached and
// Detached where they enter; a reply, another event and unreadable or
// session-less params leave both nil (the relay decides by the fields).
func TestDecodeSessions(t *testing.T) {
	cases := []struct {
		in                 string
		attached, detached string // the decoded session id, "" for nil
	}{
		{`{"method":"Target.attachedToTarget","sessionId":"P","params":{"sessionId":"S1","targetInfo":{"targetId":"T1","type":"page"},"waitingForDebugger":false}}`, "S1", ""},
		{`{"method":"Target.detachedFromTarget","sessionId":"P","params":{"sessionId":"S2","targetId":"T2"}}`, "", "S2"},
		{`{"method":"Target.detachedFromTarget","params":{}}`, "", ""},
		{`{"method":"Target.attachedToTarget","params":{"sessionId":7}}`, "", ""},
		{`{"id":3,"method":"Target.detachedFromTarget","result":{"sessionId":"S3"}}`, "", ""},
		{`{"method":"Page.loadEventFired","params":{"sessionId":"S4"}}`, "", ""},
	}
	for _, c := range cases {
		e, err := Decode([]byte(c.in))
		if err != nil {
			t.Fatalf("Decode(%s): %v", c.in, err)
		}
		e.DecodeSessions()
		var a, d string
		if e.Attached != nil {
			a = e.Attached.SessionID
		}
		if e.Detached != nil {
			d = e.Detached.SessionID
		}
		if a != c.attached || d != c.detached {
			t.Errorf("%s: attached %q detached %q, want %q %q", c.in, a, d, c.attached, c.detached)
		}
	}
	e, _ := Decode([]byte(`{"method":"Target.detachedFromTarget","params":{"sessionId":"S2","targetId":"T2"}}`))
	e.DecodeSessions()
	if e.Detached == nil || e.Detached.TargetID != "T2" {
		t.Errorf("Detached = %+v, want target T2", e.Detached)
	}
}
