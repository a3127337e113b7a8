package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// domNode is DOM.getDocument's node, as much as the tests read.
type domNode struct {
	NodeID      int64     `json:"nodeId"`
	NodeName    string    `json:"nodeName"`
	NodeValue   string    `json:"nodeValue"`
	Attributes  []string  `json:"attributes"`
	Children    []domNode `json:"children"`
	ShadowRoots []domNode `json:"shadowRoots"`
	ContentDoc  *domNode  `json:"contentDocument"`
}

// find returns the first node under n (shadow roots and frames included)
// for which ok is true, and whether it lies inside the controls' host.
func (n *domNode) find(ok func(*domNode) bool) *domNode {
	if ok(n) {
		return n
	}
	for _, list := range [][]domNode{n.ShadowRoots, n.Children} {
		for i := range list {
			if f := list[i].find(ok); f != nil {
				return f
			}
		}
	}
	if n.ContentDoc != nil {
		return n.ContentDoc.find(ok)
	}
	return nil
}

func (n *domNode) text() string {
	var b strings.Builder
	var walk func(*domNode)
	walk = func(m *domNode) {
		if m.NodeName == "#text" {
			b.WriteString(m.NodeValue)
		}
		for i := range m.ShadowRoots {
			walk(&m.ShadowRoots[i])
		}
		for i := range m.Children {
			walk(&m.Children[i])
		}
	}
	walk(n)
	return b.String()
}

// document returns the whole DOM of a session's page, closed shadow roots
// and frames included.
func document(t *testing.T, c *cdptest.Client, session string) *domNode {
	t.Helper()
	res, err := c.CallWithin(session, "DOM.getDocument", map[string]any{"depth": -1, "pierce": true}, 10*time.Second)
	if err != nil {
		t.Fatalf("DOM.getDocument: %v", err)
	}
	var d struct {
		Root domNode `json:"root"`
	}
	if err := json.Unmarshal(res, &d); err != nil {
		t.Fatal(err)
	}
	return &d.Root
}

func isNamed(name string) func(*domNode) bool {
	return func(n *domNode) bool { return strings.EqualFold(n.NodeName, name) }
}

// waitNode polls the page's DOM until find succeeds or d passes.
func waitNode(t *testing.T, c *cdptest.Client, session string, d time.Duration, ok func(*domNode) bool) *domNode {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if n := document(t, c, session).find(ok); n != nil {
			return n
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// allowButton finds the "Allow" button in the controls' closed shadow root.
func allowButton(n *domNode) bool {
	return strings.EqualFold(n.NodeName, "button") && strings.HasPrefix(n.text(), "Allow ")
}

// center returns the middle of the box of the node find matches. The
// controls redraw as the guard pushes state, so a node id can go stale
// between the look-up and DOM.getBoxModel: find again, for up to 5 s.
func center(t *testing.T, c *cdptest.Client, session string, find func(*domNode) bool) (float64, float64) {
	t.Helper()
	x, y, ok := tryCenter(t, c, session, find, 5*time.Second)
	if !ok {
		t.Fatalf("no box for the node within 5 s")
	}
	return x, y
}

// tryCenter is center that reports a node not found within d (0: one look).
func tryCenter(t *testing.T, c *cdptest.Client, session string, find func(*domNode) bool, d time.Duration) (float64, float64, bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if n := document(t, c, session).find(find); n != nil {
			res, err := c.CallWithin(session, "DOM.getBoxModel", map[string]any{"nodeId": n.NodeID}, 10*time.Second)
			if err == nil {
				var bm struct {
					Model struct {
						Content []float64 `json:"content"`
					} `json:"model"`
				}
				if json.Unmarshal(res, &bm) != nil || len(bm.Model.Content) != 8 {
					t.Fatalf("box model: %s", res)
				}
				q := bm.Model.Content
				return (q[0] + q[4]) / 2, (q[1] + q[5]) / 2, true
			}
			if !strings.Contains(err.Error(), "Could not find node") {
				t.Fatalf("DOM.getBoxModel: %v", err)
			}
		}
		if !time.Now().Before(deadline) {
			return 0, 0, false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// click sends a real left click at (x, y) on session.
func click(c *cdptest.Client, session string, x, y float64) error {
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		p := map[string]any{"type": typ, "x": x, "y": y}
		if typ != "mouseMoved" {
			p["button"], p["clickCount"] = "left", 1
		}
		if _, err := c.CallWithin(session, "Input.dispatchMouseEvent", p, 10*time.Second); err != nil {
			return err
		}
	}
	return nil
}
