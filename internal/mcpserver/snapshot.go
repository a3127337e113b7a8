package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/cdproto/target"
)

// snapshot is what a browser_snapshot handed out: refs to DOM nodes of one
// document of one tab.
type snapshot struct {
	target target.ID
	loader string // the main frame's loader when taken; a navigation changes it
	refs   map[string]cdp.BackendNodeID
}

// actionable are the roles that get a ref: what click, type, select and
// hover target.
var actionable = map[string]bool{
	"link": true, "button": true, "textbox": true, "searchbox": true, "combobox": true,
	"checkbox": true, "radio": true, "menuitem": true, "menuitemcheckbox": true,
	"menuitemradio": true, "tab": true, "option": true, "listbox": true, "slider": true,
	"spinbutton": true, "switch": true, "treeitem": true, "textarea": true,
}

// flattened roles are structure without meaning to a reader: their
// children are shown in their place.
var flattened = map[string]bool{
	"generic": true, "none": true, "presentation": true, "InlineTextBox": true,
	"LineBreak": true, "RootWebArea": true, "WebArea": true,
	// A label's text is the name of the control it labels, shown there;
	// a <select>'s popup only wraps its options.
	"LabelText": true, "MenuListPopup": true,
}

// dropped roles are left out with their subtree: a list item's bullet
// says nothing the listitem line does not (it was a fifth of a navigation
// menu's outline).
var dropped = map[string]bool{"ListMarker": true}

// states are the boolean or token properties shown in brackets.
var states = []accessibility.PropertyName{"checked", "disabled", "expanded", "selected", "pressed", "required", "readonly", "focused", "level"}

// mainLoader is the main frame's current loader id.
func mainLoader(ctx context.Context, t *tab) (string, error) {
	res, err := cdp.Call(ctx, t.s, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return "", err
	}
	if res.FrameTree == nil || res.FrameTree.Frame == nil {
		return "", errors.New("the tab has no document")
	}
	return string(res.FrameTree.Frame.LoaderID), nil
}

// maxSnapshotNodes bounds the pages a full accessibility tree is taken of:
// Chrome's reply for 100k buttons is hundreds of megabytes that the guard
// would hold while it is built (#20 item 6). Counted by Chrome
// (Performance.getMetrics "Nodes", the renderer's DOM nodes), not by the
// page, which could lie.
const maxSnapshotNodes = 80_000

// snapOpts chooses the part of the outline a snapshot shows.
type snapOpts struct {
	root     cdp.BackendNodeID // show only this element's subtree (0: all)
	rootName string            // how the model named root, for errors
	depth    int               // levels shown (0: all)
	boxes    bool              // add [box=...] to elements with a ref
}

// maxBoxes bounds the elements a snapshot asks Chrome for boxes of (one
// round trip each).
const maxBoxes = 300

// takeSnapshot renders the tab's whole accessibility tree with refs.
func (u *user) takeSnapshot(ctx context.Context, t *tab) (string, error) {
	return u.snapshotWith(ctx, t, snapOpts{})
}

// snapshotWith renders the tab's accessibility tree with refs, or the part
// o chooses. Refs are numbered over the whole tree either way, so a part
// shows the same refs as the whole, and the refs of the whole tree stay
// usable.
func (u *user) snapshotWith(ctx context.Context, t *tab, o snapOpts) (string, error) {
	loader, err := mainLoader(ctx, t)
	if err != nil {
		return "", err
	}
	if n := domNodes(ctx, t); n > maxSnapshotNodes {
		u.snap = nil
		return fmt.Sprintf("(No snapshot: the page has %d DOM nodes, over the bound of %d; its outline would be too large to send or hold. Use browser_read for its text, browser_evaluate to query it, or a CSS selector as target for actions.)", n, maxSnapshotNodes), nil
	}
	u.doing = "building the page's snapshot"
	u.hint = "the page is very large or busy; use browser_read for its text, or a CSS selector as target"
	res, err := cdp.Call(ctx, t.s, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		return "", fmt.Errorf("read the accessibility tree: %w", err)
	}
	byID := make(map[accessibility.NodeID]*accessibility.Node, len(res.Nodes))
	for _, n := range res.Nodes {
		byID[n.NodeID] = n
	}
	snap := &snapshot{target: t.id, loader: loader, refs: map[string]cdp.BackendNodeID{}}
	r := &renderer{snap: snap, byID: byID, o: o, inside: o.root == 0}
	if info, err := u.info(ctx, t); err == nil {
		if p, err := url.Parse(info.URL); err == nil && (p.Scheme == "http" || p.Scheme == "https") && p.Host != "" {
			r.origin = p.Scheme + "://" + p.Host
		}
	}
	if o.boxes {
		r.box = func(id cdp.BackendNodeID) string {
			if r.boxed >= maxBoxes {
				return ""
			}
			r.boxed++
			m, err := cdp.Call(ctx, t.s, dom.GetBoxModel, dom.GetBoxModelParams{BackendNodeID: id})
			if err != nil || m.Model == nil || len(m.Model.Border) != 8 {
				return ""
			}
			q := m.Model.Border
			x0, y0 := min(q[0], q[2], q[4], q[6]), min(q[1], q[3], q[5], q[7])
			x1, y1 := max(q[0], q[2], q[4], q[6]), max(q[1], q[3], q[5], q[7])
			return fmt.Sprintf(" [box=%.0f,%.0f,%.0f,%.0f]", x0, y0, x1-x0, y1-y0)
		}
	}
	if len(res.Nodes) > 0 {
		r.render(res.Nodes[0], 0, false)
	}
	u.snap = snap
	u.doing, u.hint = "", ""
	if o.root != 0 && !r.found {
		return "", fmt.Errorf("the element %s is not in the page's accessibility outline (it is hidden or not rendered)", clip(o.rootName, 100))
	}
	out := r.b.String()
	if r.b.Len() > maxSnapshot {
		out += fmt.Sprintf("\n(Snapshot cut at %d characters: the rest of the page is not shown; %d refs above are usable. Use browser_read for the text, or a CSS selector as target.)", maxSnapshot, len(snap.refs))
	}
	if r.boxed >= maxBoxes {
		out += fmt.Sprintf("\n(Boxes are shown for the first %d elements with a ref only.)", maxBoxes)
	}
	if r.deeper > 0 {
		out += fmt.Sprintf("\n(%d element(s) deeper than depth %d not shown.)", r.deeper, o.depth)
	}
	if out == "" {
		out = "(The element has no accessible content.)"
	}
	return out, nil
}

// domNodes is Chrome's count of the tab's renderer DOM nodes; 0 when it
// cannot tell.
func domNodes(ctx context.Context, t *tab) int {
	if err := t.s.Call(ctx, "Performance.enable", nil, nil); err != nil {
		return 0
	}
	defer func() { _ = t.s.Call(ctx, "Performance.disable", nil, nil) }()
	m, err := cdp.Call(ctx, t.s, performance.GetMetrics, cdp.Empty{})
	if err != nil {
		return 0
	}
	for _, x := range m.Metrics {
		if x.Name == "Nodes" {
			return int(x.Value)
		}
	}
	return 0
}

// renderer writes the outline. It walks the whole tree, so that refs are
// numbered alike whatever part is shown, and writes the part snapOpts
// chooses.
type renderer struct {
	b      strings.Builder
	snap   *snapshot
	byID   map[accessibility.NodeID]*accessibility.Node
	o      snapOpts
	box    func(cdp.BackendNodeID) string // nil without boxes
	boxed  int
	origin string // the page's origin: links to it are shown by their path, as @playwright/mcp does
	inside bool   // within the chosen subtree
	found  bool   // the chosen root was met
	base   int    // the shown depth of the chosen root
	deeper int    // elements left out by depth
}

func (r *renderer) render(n *accessibility.Node, depth int, named bool) {
	if r.b.Len() > maxSnapshot {
		return
	}
	if !r.inside && r.o.root != 0 && n.BackendDOMNodeID == r.o.root {
		r.inside, r.found, r.base = true, true, depth
		defer func() { r.inside = false }()
	}
	role, name := axString(n.Role), strings.TrimSpace(axString(n.Name))
	if dropped[role] {
		return
	}
	show := !n.Ignored && !flattened[role]
	if role == "StaticText" {
		// Text a named parent (a link, a button, a heading) already shows.
		show = !named && name != ""
	}
	childDepth, childNamed := depth, named
	if show {
		rel := max(depth-r.base, 0) // 0 outside the chosen subtree, where nothing is written
		write := r.inside && (r.o.depth == 0 || rel < r.o.depth)
		if r.inside && !write {
			r.deeper++
		}
		var line strings.Builder
		line.WriteString(strings.Repeat("  ", rel))
		line.WriteString("- ")
		if role == "StaticText" {
			line.WriteString("text: " + quote(name))
		} else {
			line.WriteString(role)
			if name != "" {
				line.WriteString(" " + quote(name))
			}
			for _, st := range states {
				if v, ok := axProp(n, st); ok && v != "false" && v != "" {
					if v == "true" {
						line.WriteString(" [" + string(st) + "]")
					} else {
						line.WriteString(" [" + string(st) + "=" + v + "]")
					}
				}
			}
			if actionable[role] && n.BackendDOMNodeID != 0 {
				ref := "e" + strconv.Itoa(len(r.snap.refs)+1)
				r.snap.refs[ref] = n.BackendDOMNodeID
				line.WriteString(" [ref=" + ref + "]")
				if write && r.box != nil {
					line.WriteString(r.box(n.BackendDOMNodeID))
				}
			}
			if v := strings.TrimSpace(axString(n.Value)); v != "" && v != name {
				line.WriteString(": " + quote(clip(v, 300)))
			}
			if u, ok := axProp(n, "url"); ok && u != "" && role == "link" {
				if p, ok := strings.CutPrefix(u, r.origin); ok && r.origin != "" && strings.HasPrefix(p, "/") {
					u = p
				}
				line.WriteString(" -> " + u)
			}
		}
		if write {
			r.b.WriteString(line.String())
			r.b.WriteString("\n")
		}
		childDepth = depth + 1
		childNamed = name != ""
	}
	for _, id := range n.ChildIDs {
		if c := r.byID[id]; c != nil {
			r.render(c, childDepth, childNamed)
		}
	}
}

func quote(s string) string { return strconv.Quote(clip(s, 300)) }

func axString(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var s string
	if jsonv2.Unmarshal(v.Value, &s, browserJSON) == nil {
		return s
	}
	return strings.Trim(string(v.Value), `"`)
}

func axProp(n *accessibility.Node, name accessibility.PropertyName) (string, bool) {
	for _, p := range n.Properties {
		if p.Name == name {
			return axString(p.Value), true
		}
	}
	return "", false
}

// resolveRef returns the DOM node of ref, refusing refs of another tab or
// of a document the tab has since navigated away from.
func (u *user) resolveRef(ctx context.Context, t *tab, ref string) (cdp.BackendNodeID, error) {
	if u.snap == nil {
		return 0, fmt.Errorf("ref %q is not from a snapshot of the current page (it has navigated, or no snapshot was taken); call browser_snapshot and use a ref from it", clip(ref, 40))
	}
	if u.snap.target != t.id {
		return 0, fmt.Errorf("ref %q is from a snapshot of another tab; call browser_snapshot on this tab", clip(ref, 40))
	}
	id, ok := u.snap.refs[ref]
	if !ok {
		return 0, fmt.Errorf("ref %q is not in the last snapshot; use a ref shown as [ref=eN] by browser_snapshot", clip(ref, 40))
	}
	loader, err := mainLoader(ctx, t)
	if err != nil {
		return 0, err
	}
	if loader != u.snap.loader {
		u.snap = nil
		return 0, fmt.Errorf("ref %q is stale: the page has navigated since the snapshot; call browser_snapshot again", ref)
	}
	return id, nil
}
