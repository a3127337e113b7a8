package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// checkRefusedNavigation sends Page.navigate to a refused scheme as a raw
// client with Guard events enabled: the reply must have Chrome's shape for a
// blocked navigation (frameId = the page's main frame, errorText), and a
// Guard.requestBlocked event must name the URL and the rule, for this
// user's connections only.
func checkRefusedNavigation(t *testing.T, g *cdpguard.Guard) {
	t.Helper()
	other := cdptest.DialUser(t, g.WebSocketURL(), "someone-else", cdptest.Options{})
	r := cdptest.DialUser(t, g.WebSocketURL(), "refused-navigation", cdptest.Options{})
	for _, a := range []*cdptest.Client{other, r} {
		if _, err := a.CallID(10*time.Second, 1, "", "Guard.enable", nil); err != nil {
			t.Fatal(err)
		}
	}
	session := rawPage(t, r)
	m, err := r.CallID(10*time.Second, 2, session, "Target.getTargetInfo", nil)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		TargetInfo struct{ TargetID string } `json:"targetInfo"`
	}
	_ = json.Unmarshal(m.Result, &info)

	b, _ := json.Marshal(map[string]any{"id": 3, "sessionId": session, "method": "Page.navigate", "params": map[string]string{"url": "file:///etc/passwd"}})
	if err := r.WriteFrame(websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	var reply cdptest.Message
	var event struct {
		URL, Reason, ResourceType, FrameID string
		TopLevel                           bool
	}
	deadline := time.Now().Add(10 * time.Second)
	for reply.Raw == nil || event.URL == "" {
		msg, ok := r.Next(time.Until(deadline))
		if !ok {
			t.Fatalf("no reply or no Guard.requestBlocked within 10s (reply %s, event %+v)", reply.Raw, event)
		}
		switch {
		case string(msg.RawID) == "3":
			reply = msg
		case msg.Method == "Guard.requestBlocked":
			var e struct {
				Params json.RawMessage `json:"params"`
			}
			_ = json.Unmarshal(msg.Raw, &e)
			_ = json.Unmarshal(e.Params, &event)
		}
	}
	var res struct {
		FrameID   string `json:"frameId"`
		ErrorText string `json:"errorText"`
	}
	if reply.Error != nil || json.Unmarshal(reply.Result, &res) != nil {
		t.Fatalf("Page.navigate file: must get a reply like Chrome's for a blocked navigation, got %s", reply.Raw)
	}
	if res.ErrorText != "net::ERR_BLOCKED_BY_CLIENT" || res.FrameID != info.TargetInfo.TargetID {
		t.Errorf("Page.navigate file: reply %s, want errorText net::ERR_BLOCKED_BY_CLIENT and frameId %s", reply.Raw, info.TargetInfo.TargetID)
	}
	if event.URL != "file:///etc/passwd" || !strings.Contains(event.Reason, `scheme "file" is never allowed`) || !event.TopLevel || event.FrameID != res.FrameID {
		t.Errorf("Guard.requestBlocked = %+v: want the URL, the rule and the frame", event)
	}

	// A block by the Fetch judge (a host outside the allowlist) is told to
	// this user's connections too, and to no one else.
	const blocked = "http://not-on-the-allowlist.invalid/secret-path"
	b, _ = json.Marshal(map[string]any{"id": 4, "sessionId": session, "method": "Page.navigate", "params": map[string]string{"url": blocked}})
	if err := r.WriteFrame(websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	told := false
	deadline = time.Now().Add(10 * time.Second)
	for !told {
		msg, ok := r.Next(time.Until(deadline))
		if !ok {
			t.Fatalf("no Guard.requestBlocked for %s within 10s", blocked)
		}
		told = msg.Method == "Guard.requestBlocked" && strings.Contains(string(msg.Raw), "secret-path")
	}
	for {
		m, ok := other.Next(500 * time.Millisecond)
		if !ok {
			break
		}
		if m.Method == "Guard.requestBlocked" && (strings.Contains(string(m.Raw), "file:///etc/passwd") || strings.Contains(string(m.Raw), "secret-path")) {
			t.Errorf("another user's connection was told of this user's blocked request: %s", m.Raw)
		}
	}
}
