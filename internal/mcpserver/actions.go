package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"

	"github.com/cdpguard/cdpguard/js"
)

// actionableWait bounds the wait for an element to become visible and
// enabled.
const actionableWait = 5 * time.Second

const objectGroup = "cdpguard-mcp"

// element is a DOM node ready for input: scrolled into view, visible and
// enabled, with its centre in viewport coordinates.
type element struct {
	obj  runtime.RemoteObjectID
	x, y float64
}

// goneErr is the error for a node the page removed.
func goneErr(ref string) error {
	return fmt.Errorf("the element %s is no longer on the page; call browser_snapshot again", ref)
}

// prepare scrolls ref's node into view and waits (bounded) until it is
// visible and enabled.
func (u *user) prepare(ctx context.Context, t *tab, ref string, needEnabled bool) (*element, error) {
	id, err := u.resolveTarget(ctx, t, ref)
	if err != nil {
		return nil, err
	}
	obj, err := cdp.Call(ctx, t.s, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: id, ObjectGroup: objectGroup})
	if err != nil || obj.Object == nil {
		return nil, goneErr(ref)
	}
	el := &element{obj: obj.Object.ObjectID}
	deadline := time.Now().Add(actionableWait)
	last := "not visible"
	for {
		_ = call0(ctx, t.s, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: id})
		var st struct {
			Visible bool `json:"visible"`
			Enabled bool `json:"enabled"`
			Gone    bool `json:"gone"`
		}
		if err := callOn(ctx, t, el.obj, js.MCPActionable, nil, &st); err != nil {
			return nil, goneErr(ref)
		}
		if st.Gone {
			return nil, goneErr(ref)
		}
		if st.Visible && (st.Enabled || !needEnabled) {
			q, err := cdp.Call(ctx, t.s, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: id})
			if err == nil && len(q.Quads) > 0 && len(q.Quads[0]) == 8 {
				qd := q.Quads[0]
				el.x, el.y = (qd[0]+qd[2]+qd[4]+qd[6])/4, (qd[1]+qd[3]+qd[5]+qd[7])/4
				return el, nil
			}
		} else if st.Visible {
			last = "disabled"
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the element %s stayed %s for %s; take a new snapshot or pick another element", ref, last, actionableWait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (u *user) release(ctx context.Context, t *tab) {
	_ = t.s.Call(ctx, runtime.CommandReleaseObjectGroup, &runtime.ReleaseObjectGroupParams{ObjectGroup: objectGroup}, nil)
}

// callOn calls an embedded in-page function on obj and decodes its value.
func callOn(ctx context.Context, t *tab, obj runtime.RemoteObjectID, fn string, args []any, out any) error {
	var cargs []*runtime.CallArgument
	for _, a := range args {
		b, err := jsonv2.Marshal(a)
		if err != nil {
			return err
		}
		cargs = append(cargs, &runtime.CallArgument{Value: b})
	}
	res, err := cdp.Call(ctx, t.s, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: fn, ObjectID: obj, Arguments: cargs, ReturnByValue: ptr(true), AwaitPromise: ptr(true),
	})
	if err != nil {
		return err
	}
	if res.ExceptionDetails != nil {
		return errors.New(exceptionText(res.ExceptionDetails))
	}
	if out != nil && res.Result != nil && len(res.Result.Value) > 0 {
		return jsonv2.Unmarshal(res.Result.Value, out, browserJSON)
	}
	return nil
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d.Exception != nil && d.Exception.Description != "" {
		return clip(d.Exception.Description, 1000)
	}
	return clip(d.Text, 1000)
}

// click sends real mouse events at the element's centre.
func (u *user) click(ctx context.Context, t *tab, el *element, button string, double bool) error {
	return u.clickWith(ctx, t, el, button, double, nil)
}

// clickModifiers are browser_click's modifier keys (ControlOrMeta is
// Control: the browser runs on Linux).
var clickModifiers = map[string]string{"Alt": "Alt", "Control": "Control", "ControlOrMeta": "Control", "Meta": "Meta", "Shift": "Shift"}

// clickWith clicks holding the modifier keys mods: each is pressed before
// the mouse events, which carry them, and released after.
func (u *user) clickWith(ctx context.Context, t *tab, el *element, button string, double bool, mods []string) error {
	var mask int64
	var held []string
	for _, m := range mods {
		k, ok := clickModifiers[m]
		if !ok {
			return fmt.Errorf("modifier %q is not one of Alt, Control, ControlOrMeta, Meta, Shift", clip(m, 20))
		}
		if mask&modifiers[k] == 0 {
			held = append(held, k)
		}
		mask |= modifiers[k]
	}
	for _, k := range held {
		if err := call0(ctx, t.s, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeRawKeyDown, Key: k, Code: modifierCode(k), Modifiers: mask}); err != nil {
			return err
		}
	}
	err := u.clickMasked(ctx, t, el, button, double, mask)
	for i := len(held) - 1; i >= 0; i-- {
		// Released even after a failed click: a held key would stay down
		// for the next action.
		if e := call0(ctx, t.s, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Key: held[i], Code: modifierCode(held[i])}); err == nil {
			err = e
		}
	}
	return err
}

// modifierCode is a modifier key's code (the left one).
func modifierCode(k string) string {
	if k == "Meta" {
		return "MetaLeft"
	}
	return k + "Left"
}

func (u *user) clickMasked(ctx context.Context, t *tab, el *element, button string, double bool, mask int64) error {
	b := input.MouseButton(button)
	switch b {
	case "":
		b = input.MouseButtonLeft
	case input.MouseButtonLeft, input.MouseButtonRight, input.MouseButtonMiddle:
	default:
		return fmt.Errorf("button %q is not one of left, right, middle", clip(button, 20))
	}
	send := func(typ input.DispatchMouseEventType, b input.MouseButton, n int64) error {
		return call0(ctx, t.s, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: typ, X: el.x, Y: el.y, Button: b, ClickCount: n, Modifiers: mask})
	}
	if err := send(input.DispatchMouseEventTypeMouseMoved, input.MouseButtonNone, 0); err != nil {
		return err
	}
	clicks := []int64{1}
	if double {
		clicks = []int64{1, 2}
	}
	for _, n := range clicks {
		if err := send(input.DispatchMouseEventTypeMousePressed, b, n); err != nil {
			return err
		}
		if err := send(input.DispatchMouseEventTypeMouseReleased, b, n); err != nil {
			return err
		}
	}
	return nil
}

func mouse(ctx context.Context, t *tab, typ input.DispatchMouseEventType, el *element, b input.MouseButton, clicks int64) error {
	return call0(ctx, t.s, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: typ, X: el.x, Y: el.y, Button: b, ClickCount: clicks})
}

// typeSlowly types text one character at a time with key events (keydown,
// keypress, input, keyup each), for pages that react to keys.
func typeSlowly(ctx context.Context, t *tab, text string) error {
	for _, r := range text {
		ch := string(r)
		if r == '\n' {
			ch = "\r"
		}
		key := ch
		if r == '\n' {
			key = "Enter"
		}
		if err := call0(ctx, t.s, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: key, Text: ch, UnmodifiedText: ch}); err != nil {
			return err
		}
		if err := call0(ctx, t.s, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Key: key}); err != nil {
			return err
		}
	}
	return nil
}

// typeText replaces the element's content with text through real input
// (Input.insertText after selecting the old content). An element that
// takes no text is refused before any input reaches it (no click).
func (u *user) typeText(ctx context.Context, t *tab, el *element, text string) error {
	return u.typeInto(ctx, t, el, text, false)
}

// typeInto is typeText, one key event per character when slowly.
func (u *user) typeInto(ctx context.Context, t *tab, el *element, text string, slowly bool) error {
	var editable bool
	if err := callOn(ctx, t, el.obj, js.MCPEditable, nil, &editable); err != nil {
		return err
	}
	if !editable {
		return errors.New("the element does not take text (it is not a text field, text area or editable element); pick a textbox from the snapshot. Nothing was clicked")
	}
	if err := u.click(ctx, t, el, "left", false); err != nil {
		return err
	}
	if err := callOn(ctx, t, el.obj, js.MCPClear, nil, &editable); err != nil {
		return err
	}
	if slowly {
		return typeSlowly(ctx, t, text)
	}
	return call0(ctx, t.s, input.InsertText, input.InsertTextParams{Text: text})
}

// keyDef describes a named key for Input.dispatchKeyEvent.
type keyDef struct {
	code string
	vk   int64
	text string
}

var keys = map[string]keyDef{
	"Enter": {"Enter", 13, "\r"}, "Tab": {"Tab", 9, ""}, "Escape": {"Escape", 27, ""},
	"Backspace": {"Backspace", 8, ""}, "Delete": {"Delete", 46, ""}, "Space": {"Space", 32, " "},
	"ArrowUp": {"ArrowUp", 38, ""}, "ArrowDown": {"ArrowDown", 40, ""}, "ArrowLeft": {"ArrowLeft", 37, ""},
	"ArrowRight": {"ArrowRight", 39, ""}, "Home": {"Home", 36, ""}, "End": {"End", 35, ""},
	"PageUp": {"PageUp", 33, ""}, "PageDown": {"PageDown", 34, ""},
}

// modifiers are the modifier keys of a combination, as CDP's bit mask.
var modifiers = map[string]int64{"Alt": 1, "Control": 2, "Ctrl": 2, "Meta": 4, "Command": 4, "Shift": 8}

// pressKey sends one key press, or a combination like Control+a, to the
// focused element.
func (u *user) pressKey(ctx context.Context, t *tab, combo string) error {
	parts := strings.Split(combo, "+")
	if strings.HasSuffix(combo, "++") || combo == "+" {
		parts = append(strings.Split(strings.TrimSuffix(combo, "++"), "+"), "+")
	}
	key := parts[len(parts)-1]
	var mods int64
	var held []string
	for _, m := range parts[:len(parts)-1] {
		bit, ok := modifiers[m]
		if !ok {
			return fmt.Errorf("%q in %q is not a modifier; use Alt, Control, Meta or Shift, like Control+a", clip(m, 20), clip(combo, 40))
		}
		mods |= bit
		held = append(held, m)
	}
	k, ok := keys[key]
	name := key
	switch {
	case ok:
		if key == "Space" {
			name = " "
		}
	case len([]rune(key)) == 1:
		k = keyDef{text: key}
		r := []rune(strings.ToUpper(key))[0]
		if r >= 'A' && r <= 'Z' {
			k.code, k.vk = "Key"+string(r), int64(r)
		} else if r >= '0' && r <= '9' {
			k.code, k.vk = "Digit"+string(r), int64(r)
		}
	default:
		names := make([]string, 0, len(keys))
		for n := range keys {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("key %q is not known; use a single character or one of %s, optionally with modifiers like Control+a", clip(key, 40), strings.Join(names, ", "))
	}
	if mods&^8 != 0 {
		k.text = "" // a shortcut types nothing
	}
	for _, m := range held {
		if err := call0(ctx, t.s, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeRawKeyDown, Key: m, Modifiers: mods}); err != nil {
			return err
		}
	}
	down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: name, Code: k.code, WindowsVirtualKeyCode: k.vk, NativeVirtualKeyCode: k.vk, Text: k.text, Modifiers: mods}
	if k.text == "" {
		down.Type = input.DispatchKeyEventTypeRawKeyDown
	}
	if err := call0(ctx, t.s, input.DispatchKeyEvent, down); err != nil {
		return err
	}
	up := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Key: name, Code: k.code, WindowsVirtualKeyCode: k.vk, NativeVirtualKeyCode: k.vk, Modifiers: mods}
	if err := call0(ctx, t.s, input.DispatchKeyEvent, up); err != nil {
		return err
	}
	for i := len(held) - 1; i >= 0; i-- {
		if err := call0(ctx, t.s, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Key: held[i]}); err != nil {
			return err
		}
	}
	return nil
}

// documentObject returns the main world's document, for functions called
// on the page.
func documentObject(ctx context.Context, t *tab) (runtime.RemoteObjectID, error) {
	doc, err := cdp.Call(ctx, t.s, dom.GetDocument, dom.GetDocumentParams{Depth: ptr(int64(0))})
	if err != nil || doc.Root == nil {
		return "", fmt.Errorf("the page has no document: %w", err)
	}
	obj, err := cdp.Call(ctx, t.s, dom.ResolveNode, dom.ResolveNodeParams{NodeID: doc.Root.NodeID, ObjectGroup: objectGroup})
	if err != nil || obj.Object == nil {
		return "", fmt.Errorf("the page has no document: %w", err)
	}
	return obj.Object.ObjectID, nil
}

// pageText returns the page's rendered text (js.MCPPageText).
func pageText(ctx context.Context, t *tab) (string, error) {
	res, err := cdp.Call(ctx, t.s, runtime.Evaluate, runtime.EvaluateParams{Expression: js.MCPPageText, ReturnByValue: ptr(true)})
	if err != nil {
		return "", err
	}
	if res.ExceptionDetails != nil {
		return "", errors.New(exceptionText(res.ExceptionDetails))
	}
	var v struct {
		Text string `json:"text"`
	}
	if res.Result != nil && len(res.Result.Value) > 0 {
		if err := jsonv2.Unmarshal(res.Result.Value, &v, browserJSON); err != nil {
			return "", err
		}
	}
	return v.Text, nil
}

// call0 runs a command whose result does not matter.
func call0[P, R any](ctx context.Context, s cdp.Session, c cdp.Command[P, R], params P) error {
	_, err := cdp.Call(ctx, s, c, params)
	return err
}
