package relay

import (
	"strings"
	"testing"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

// TestLoneSurrogateFromBrowser: Chrome writes a string holding a lone
// UTF-16 surrogate (a page's text cut inside an emoji: "x\ud800y") as that
// escape, in a reply (Runtime.evaluate of document.title) as in events
// (console.log of it); the reply reaches the agent. The mux decoded the browser's
// messages as strictly as an agent's and dropped them: any page could
// leave an agent's command unanswered for good.
func TestLoneSurrogateFromBrowser(t *testing.T) {
	h := newHarness(t)
	const value = `"x\ud800y"`
	h.b.setResponder(func(e *cdpmsg.Envelope) ([][]byte, bool) {
		if e.Method != "Runtime.evaluate" {
			return nil, false
		}
		return [][]byte{cdpmsg.AppendResponse(nil, e.ID, e.SessionID, []byte(`{"result":{"type":"string","value":`+value+`}}`), nil)}, true
	})
	ag := h.startAgent(t, AgentOptions{Name: "x"})
	ag.send(t, `{"id":7,"method":"Runtime.evaluate","params":{"expression":"document.title"}}`)
	if got := string(ag.recv(t)); !strings.Contains(got, `"id":7`) || !strings.Contains(got, value) {
		t.Fatalf("the reply holding a lone surrogate: %s", got)
	}
}
