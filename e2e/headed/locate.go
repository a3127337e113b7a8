package headed

import (
	"context"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// Point is a position in CSS pixels: in a page's viewport (what
// Input.dispatchMouseEvent takes) or on the X screen (what xdotool takes).
// Under Xvfb the device pixel ratio is 1, so both are device pixels too.
type Point struct{ X, Y float64 }

// Node is one DOM node as DOM.getDocument returns it, with what a test
// matches on.
type Node struct {
	NodeID          int64    `json:"nodeId"`
	BackendNodeID   int64    `json:"backendNodeId"`
	NodeName        string   `json:"nodeName"`
	LocalName       string   `json:"localName"`
	NodeValue       string   `json:"nodeValue"`
	Attributes      []string `json:"attributes"`
	ShadowRootType  string   `json:"shadowRootType"`
	Children        []*Node  `json:"children"`
	ShadowRoots     []*Node  `json:"shadowRoots"`
	ContentDocument *Node    `json:"contentDocument"`
	TemplateContent *Node    `json:"templateContent"`
}

// Attr returns the value of attribute name and whether it is set.
func (n *Node) Attr(name string) (string, bool) {
	for i := 0; i+1 < len(n.Attributes); i += 2 {
		if n.Attributes[i] == name {
			return n.Attributes[i+1], true
		}
	}
	return "", false
}

// Text returns the concatenated text of n's descendants (shadow trees
// included), for matching a button by its label.
func (n *Node) Text() string {
	s := ""
	n.walk(func(c *Node) bool {
		if c.NodeName == "#text" {
			s += c.NodeValue
		}
		return false
	})
	return s
}

// Find returns the first node under n (n included; shadow roots and
// frame documents too) that match accepts, or nil.
func (n *Node) Find(match func(*Node) bool) *Node { return n.walk(match) }

// walk visits n and its descendants, shadow roots (open and closed) and
// frame documents included, depth first, until visit returns true.
func (n *Node) walk(visit func(*Node) bool) *Node {
	if visit(n) {
		return n
	}
	kids := append(append([]*Node(nil), n.ShadowRoots...), n.Children...)
	if n.ContentDocument != nil {
		kids = append(kids, n.ContentDocument)
	}
	for _, k := range kids {
		if hit := k.walk(visit); hit != nil {
			return hit
		}
	}
	return nil
}

// Document returns the whole DOM of session's page, with
// DOM.getDocument{depth:-1, pierce:true}: closed shadow roots and iframe
// documents included. c is whoever looks: the test's direct connection, or
// an agent's connection through the guard (then it sees what an agent sees).
func Document(ctx context.Context, c *cdptest.Client, session string) (*Node, error) {
	v, err := c.Call(ctx, session, "DOM.getDocument", map[string]any{"depth": -1, "pierce": true})
	if err != nil {
		return nil, err
	}
	var r struct {
		Root *Node `json:"root"`
	}
	if err := unmarshal(v, &r); err != nil || r.Root == nil {
		return nil, fmt.Errorf("DOM.getDocument: no root (%v)", err)
	}
	return r.Root, nil
}

// FindNode returns the first node of session's page (shadow trees and
// frames included) that match accepts.
func FindNode(ctx context.Context, c *cdptest.Client, session string, match func(*Node) bool) (*Node, error) {
	root, err := Document(ctx, c, session)
	if err != nil {
		return nil, err
	}
	if n := root.walk(match); n != nil {
		return n, nil
	}
	return nil, fmt.Errorf("no matching node in the page's DOM")
}

// ByID matches an element with id="id".
func ByID(id string) func(*Node) bool {
	return func(n *Node) bool { v, ok := n.Attr("id"); return ok && v == id }
}

// ByTag matches an element with tag name (lower case) and text containing
// text (any text when text is "").
func ByTag(tag, text string) func(*Node) bool {
	return func(n *Node) bool {
		return n.LocalName == tag && (text == "" || strings.Contains(n.Text(), text))
	}
}

// Center returns the centre of the node's content box in the viewport of
// session's page (CSS pixels, DOM.getBoxModel): where a click lands on it.
// The node must be in the main frame's document.
func Center(ctx context.Context, c *cdptest.Client, session string, backendNodeID int64) (Point, error) {
	v, err := c.Call(ctx, session, "DOM.getBoxModel", map[string]any{"backendNodeId": backendNodeID})
	if err != nil {
		return Point{}, err
	}
	var r struct {
		Model struct {
			Content []float64 `json:"content"`
		} `json:"model"`
	}
	if err := unmarshal(v, &r); err != nil || len(r.Model.Content) != 8 {
		return Point{}, fmt.Errorf("DOM.getBoxModel: no content quad in %s (%v)", v, err)
	}
	q := r.Model.Content
	return Point{(q[0] + q[2] + q[4] + q[6]) / 4, (q[1] + q[3] + q[5] + q[7]) / 4}, nil
}

// ScreenPoint maps a viewport point of targetID's page (session) to X screen
// coordinates. It measures rather than assumes: the window's bounds from
// Browser.getWindowForTarget and the viewport's size from
// Page.getLayoutMetrics (neither can be faked by the page); the browser's
// own UI (tab strip, toolbar) is the height difference, on top, and any
// side border is split evenly. The page must be scrolled to the top-left
// (points are viewport points, so a scrolled page is fine too).
func ScreenPoint(ctx context.Context, c *cdptest.Client, session, targetID string, p Point) (Point, error) {
	v, err := c.Call(ctx, "", "Browser.getWindowForTarget", map[string]any{"targetId": targetID})
	if err != nil {
		return Point{}, err
	}
	var w struct {
		Bounds struct {
			Left   float64 `json:"left"`
			Top    float64 `json:"top"`
			Width  float64 `json:"width"`
			Height float64 `json:"height"`
		} `json:"bounds"`
	}
	if err := unmarshal(v, &w); err != nil {
		return Point{}, fmt.Errorf("Browser.getWindowForTarget: %w", err)
	}
	v, err = c.Call(ctx, session, "Page.getLayoutMetrics", nil)
	if err != nil {
		return Point{}, err
	}
	var m struct {
		CSSLayoutViewport struct {
			ClientWidth  float64 `json:"clientWidth"`
			ClientHeight float64 `json:"clientHeight"`
		} `json:"cssLayoutViewport"`
		CSSVisualViewport struct {
			ClientWidth  float64 `json:"clientWidth"`
			ClientHeight float64 `json:"clientHeight"`
			Zoom         float64 `json:"zoom"`
		} `json:"cssVisualViewport"`
	}
	if err := unmarshal(v, &m); err != nil {
		return Point{}, fmt.Errorf("Page.getLayoutMetrics: %w", err)
	}
	// The layout viewport's client size excludes scrollbars; the visual
	// viewport's too. The browser UI is what the window has beyond the
	// page: measured from the window, not from scrollbars, so use the
	// larger of the two page sizes reported.
	vw := max(m.CSSLayoutViewport.ClientWidth, m.CSSVisualViewport.ClientWidth)
	vh := max(m.CSSLayoutViewport.ClientHeight, m.CSSVisualViewport.ClientHeight)
	if vw <= 0 || vh <= 0 || w.Bounds.Width < vw || w.Bounds.Height < vh {
		return Point{}, fmt.Errorf("window %vx%v smaller than its viewport %vx%v", w.Bounds.Width, w.Bounds.Height, vw, vh)
	}
	left := w.Bounds.Left + (w.Bounds.Width-vw)/2
	top := w.Bounds.Top + (w.Bounds.Height - vh)
	return Point{left + p.X, top + p.Y}, nil
}

func unmarshal(v jsonv2.Value, out any) error { return jsonv2.Unmarshal(v, out) }
