package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cdpguard/cdpguard/js"
)

// refPattern is what a snapshot ref looks like; anything else in target
// is a CSS selector.
var refPattern = regexp.MustCompile(`^e[0-9]+$`)

// resolveTarget returns the DOM node a target names: a ref of the last
// snapshot, or a CSS selector on the current page.
func (u *user) resolveTarget(ctx context.Context, t *tab, target string) (cdp.BackendNodeID, error) {
	target = strings.TrimSpace(target)
	switch {
	case target == "":
		return 0, errors.New("give target: a ref from browser_snapshot (like e12) or a CSS selector")
	case len(target) > 1000:
		return 0, errors.New("target is too long; use a ref shown as [ref=eN] by browser_snapshot or a short CSS selector")
	case refPattern.MatchString(target):
		return u.resolveRef(ctx, t, target)
	}
	doc, err := cdp.Call(ctx, t.s, dom.GetDocument, dom.GetDocumentParams{Depth: ptr(int64(0))})
	if err != nil || doc.Root == nil {
		return 0, &PageError{Msg: "the page has no document"}
	}
	q, err := cdp.Call(ctx, t.s, dom.QuerySelector, dom.QuerySelectorParams{NodeID: doc.Root.NodeID, Selector: target})
	if err != nil {
		if ctx.Err() != nil {
			return 0, err
		}
		return 0, fmt.Errorf("target %q is neither a snapshot ref (like e12) nor a valid CSS selector", clip(target, 100))
	}
	if q.NodeID == 0 {
		return 0, fmt.Errorf("no element matches the selector %q; take a browser_snapshot and use a ref", clip(target, 100))
	}
	d, err := cdp.Call(ctx, t.s, dom.DescribeNode, dom.DescribeNodeParams{NodeID: q.NodeID})
	if err != nil || d.Node == nil {
		return 0, goneErr(target)
	}
	return d.Node.BackendNodeID, nil
}

// onElement prepares target's element and runs act on it while watching
// for a navigation it starts.
func (s *Server) onElement(ctx context.Context, u *user, target string, needEnabled bool, window time.Duration, act func(t *tab, el *element) error) (*mcp.CallToolResult, error) {
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	el, err := u.prepare(ctx, t, target, needEnabled)
	if err != nil {
		return nil, err
	}
	err = u.whileNavigatingFor(ctx, t, window, func() error { return act(t, el) })
	u.release(ctx, t)
	if err != nil {
		return nil, err
	}
	return u.actionResult(ctx, t)
}

// actionResult is an action's result: the page it left, and the tab it
// opened (which becomes the current tab).
func (u *user) actionResult(ctx context.Context, t *tab) (*mcp.CallToolResult, error) {
	pop, err := u.takePopups(ctx)
	if err != nil {
		return nil, err
	}
	if pop != "" {
		t = u.cur
	}
	line, err := u.pageLine(ctx, t)
	if err != nil {
		return nil, err
	}
	if pop != "" {
		line = pop + "\n" + line
	}
	return textResult(line), nil
}

func (s *Server) toolClick(ctx context.Context, u *user, in clickIn) (*mcp.CallToolResult, error) {
	return s.onElement(ctx, u, pick(in.Target, in.Ref), true, startedWait, func(t *tab, el *element) error {
		return u.clickWith(ctx, t, el, in.Button, in.DoubleClick, in.Modifiers)
	})
}

func (s *Server) toolHover(ctx context.Context, u *user, in refIn) (*mcp.CallToolResult, error) {
	return s.onElement(ctx, u, pick(in.Target, in.Ref), false, quietWait, func(t *tab, el *element) error {
		return mouse(ctx, t, "mouseMoved", el, "none", 0)
	})
}

func (s *Server) toolType(ctx context.Context, u *user, in typeIn) (*mcp.CallToolResult, error) {
	if len(in.Text) > maxText {
		return nil, fmt.Errorf("text is %d bytes; the limit is %d", len(in.Text), maxText)
	}
	window := quietWait
	if in.Submit {
		window = startedWait
	}
	return s.onElement(ctx, u, pick(in.Target, in.Ref), true, window, func(t *tab, el *element) error {
		if err := u.typeInto(ctx, t, el, in.Text, in.Slowly); err != nil {
			return err
		}
		if in.Submit {
			return u.pressKey(ctx, t, "Enter")
		}
		return nil
	})
}

func (s *Server) toolSelect(ctx context.Context, u *user, in selectIn) (*mcp.CallToolResult, error) {
	if len(in.Values) == 0 || len(in.Values) > 100 {
		return nil, errors.New("values must list 1 to 100 option values or labels")
	}
	var picked []string
	res, err := s.onElement(ctx, u, pick(in.Target, in.Ref), true, quietWait, func(t *tab, el *element) error {
		var err error
		picked, err = u.selectValues(ctx, t, el, in.Values)
		return err
	})
	if err != nil {
		return nil, err
	}
	res.Content = append(res.Content, &mcp.TextContent{Text: "Selected: " + strings.Join(picked, ", ")})
	return res, nil
}

func (u *user) selectValues(ctx context.Context, t *tab, el *element, values []string) ([]string, error) {
	var r struct {
		Picked []string `json:"picked"`
		Error  string   `json:"error"`
	}
	if err := callOn(ctx, t, el.obj, js.MCPSelect, []any{values}, &r); err != nil {
		return nil, err
	}
	if r.Error != "" {
		return nil, errors.New(r.Error)
	}
	return r.Picked, nil
}

// toolFillForm fills several fields in one call: text fields are typed,
// checkboxes and radios clicked to the wanted state, selects selected.
func (s *Server) toolFillForm(ctx context.Context, u *user, in fillIn) (*mcp.CallToolResult, error) {
	if len(in.Fields) == 0 || len(in.Fields) > 50 {
		return nil, errors.New("fields must list 1 to 50 fields")
	}
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	var done []string
	err = u.whileNavigatingFor(ctx, t, quietWait, func() error {
		for i, f := range in.Fields {
			if len(f.Value) > maxText {
				return fmt.Errorf("field %d: value is %d bytes; the limit is %d", i, len(f.Value), maxText)
			}
			el, err := u.prepare(ctx, t, pick(f.Target, f.Ref), true)
			if err != nil {
				return fmt.Errorf("field %d (%s): %w", i, clip(f.Name, 60), err)
			}
			switch f.Type {
			case "", "textbox":
				err = u.typeText(ctx, t, el, f.Value)
			case "checkbox", "radio":
				var on bool
				if err = callOn(ctx, t, el.obj, js.MCPChecked, nil, &on); err == nil && on != (f.Value == "true") {
					err = u.click(ctx, t, el, "left", false)
				}
			case "combobox":
				_, err = u.selectValues(ctx, t, el, []string{f.Value})
			case "slider":
				var r struct {
					Error string `json:"error"`
				}
				if err = callOn(ctx, t, el.obj, js.MCPSlider, []any{f.Value}, &r); err == nil && r.Error != "" {
					err = errors.New(r.Error)
				}
			default:
				err = fmt.Errorf("type %q is not one of textbox, checkbox, radio, combobox, slider", clip(f.Type, 20))
			}
			if err != nil {
				return fmt.Errorf("field %d (%s): %w", i, clip(f.Name, 60), err)
			}
			done = append(done, clip(f.Name, 60))
		}
		return nil
	})
	u.release(ctx, t)
	if err != nil {
		return nil, err
	}
	res, err := u.actionResult(ctx, t)
	if err != nil {
		return nil, err
	}
	res.Content = append(res.Content, &mcp.TextContent{Text: fmt.Sprintf("Filled %d field(s): %s", len(done), strings.Join(done, ", "))})
	return res, nil
}

// toolDrag drags one element onto another with real mouse events.
func (s *Server) toolDrag(ctx context.Context, u *user, in dragIn) (*mcp.CallToolResult, error) {
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	from, err := u.prepare(ctx, t, pick(in.StartTarget, in.StartRef), true)
	if err != nil {
		return nil, err
	}
	to, err := u.prepare(ctx, t, pick(in.EndTarget, in.EndRef), false)
	if err != nil {
		return nil, err
	}
	err = u.whileNavigatingFor(ctx, t, quietWait, func() error {
		steps := []struct {
			typ input.DispatchMouseEventType
			el  *element
			b   input.MouseButton
			n   int64
		}{
			{input.DispatchMouseEventTypeMouseMoved, from, input.MouseButtonNone, 0},
			{input.DispatchMouseEventTypeMousePressed, from, input.MouseButtonLeft, 1},
			{input.DispatchMouseEventTypeMouseMoved, &element{x: (from.x + to.x) / 2, y: (from.y + to.y) / 2}, input.MouseButtonLeft, 0},
			{input.DispatchMouseEventTypeMouseMoved, to, input.MouseButtonLeft, 0},
			{input.DispatchMouseEventTypeMouseReleased, to, input.MouseButtonLeft, 1},
		}
		for _, st := range steps {
			if err := mouse(ctx, t, st.typ, st.el, st.b, st.n); err != nil {
				return err
			}
		}
		return nil
	})
	u.release(ctx, t)
	if err != nil {
		return nil, err
	}
	return u.actionResult(ctx, t)
}

func (s *Server) toolKey(ctx context.Context, u *user, in keyIn) (*mcp.CallToolResult, error) {
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	if err := u.whileNavigating(ctx, t, func() error { return u.pressKey(ctx, t, in.Key) }); err != nil {
		return nil, err
	}
	return u.actionResult(ctx, t)
}

// pick is target, or the older ref.
func pick(target, ref string) string {
	if target != "" {
		return target
	}
	return ref
}
