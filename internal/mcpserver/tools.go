package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// handler is a tool body; it runs holding the user's lock.
type handler[In any] func(ctx context.Context, u *user, in In) (*mcp.CallToolResult, error)

// addTool registers one tool: the user comes from the request's header,
// calls of one user run one after another, and notes (dialogs) are added
// to the result.
func addTool[In any](s *Server, name, desc string, readOnly bool, h handler[In]) {
	if s.known == nil {
		s.known = map[string]bool{}
	}
	if !s.known[name] { // PolicyChanged registers the tools again: only read then
		s.known[name] = true
		s.names = append(s.names, name)
	}
	t := &mcp.Tool{Name: name, Description: desc, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly, OpenWorldHint: ptr(true)}}
	if sc, err := jsonschema.For[In](nil); err == nil {
		singleTypes(sc)
		t.InputSchema = sc
	}
	mcp.AddTool(s.mcp, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (res *mcp.CallToolResult, _ any, err error) {
		var hdr map[string][]string
		if req.Extra != nil {
			hdr = req.Extra.Header
		}
		bound := s.opts.CallTimeout
		ctx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		// The server's end ends the call: Run closes the sessions, and a
		// session's Close waits for its calls.
		defer context.AfterFunc(s.ctx, cancel)()
		if s.opts.OnToolCall != nil {
			defer func() { s.opts.OnToolCall(name, outcome(ctx, err)) }()
		}
		u, err := s.lockUser(ctx, hdr)
		if err != nil {
			return nil, nil, err
		}
		defer u.unlock()
		defer func() {
			if p := recover(); p != nil {
				s.opts.Logger.Error("mcp tool panicked", "tool", name, "panic", p)
				res, err = nil, fmt.Errorf("%s failed inside the server; try again or take a new snapshot", name)
			}
		}()
		// A dialog opening on a tab of this user ends the call at once
		// (the page is blocked until the dialog is answered).
		cctx, stop := context.WithCancelCause(ctx)
		defer stop(nil)
		u.setCall(stop, name)
		u.doing, u.hint = "", ""
		res, err = h(cctx, u, in)
		if opened := u.endCall(); opened != nil {
			res, err = textResult(opened.result(s.opts.DialogWait)), nil
			if opened.loop > 0 {
				u.forget(opened.tab) // being closed
				u.curID = ""
			}
		} else if err != nil && ctx.Err() == context.DeadlineExceeded {
			err = u.timeoutErr(name, bound)
			// Whatever the call waited for (a promise, a load, a guard
			// read) is abandoned with its connection; the next call opens
			// a new one on the same tab, which shows what it loaded so far.
			u.stopLoading()
			u.reset()
		}
		notes := u.takeNotes()
		if errors.Is(err, ErrClosed) {
			// This call reported the loss; the next one starts afresh.
			u.reset()
			err = fmt.Errorf("%w; the browser state may have been cleared (after a browser restart tabs, cookies and storage are gone). The next call opens a new connection: call browser_tabs to see what is open", err)
		}
		if err != nil {
			if len(notes) > 0 {
				err = fmt.Errorf("%w\n%s", err, strings.Join(notes, "\n"))
			}
			return nil, nil, err
		}
		if res == nil {
			res = textResult("Done.")
		}
		if len(notes) > 0 {
			res.Content = append(res.Content, &mcp.TextContent{Text: strings.Join(notes, "\n")})
		}
		return res, nil, nil
	})
}

// outcome names how a tool call ended, for the guard's metrics.
func outcome(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return "ok"
	case ctx.Err() != nil:
		return "canceled"
	}
	return "error"
}

func ptr[T any](v T) *T { return &v }

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// Tool arguments, named as @playwright/mcp names them.
type (
	navigateIn struct {
		URL string `json:"url" jsonschema:"the absolute URL to open"`
	}
	readIn struct {
		URL    string `json:"url,omitempty" jsonschema:"the URL to open and read; omit to read the current page"`
		Offset int    `json:"offset,omitempty" jsonschema:"character offset to continue from (nextOffset of the previous call)"`
	}
	refIn struct {
		Target  string `json:"target,omitempty" jsonschema:"the element: a ref from browser_snapshot (like e12) or a CSS selector"`
		Ref     string `json:"ref,omitempty" jsonschema:"older name of target: a ref from browser_snapshot"`
		Element string `json:"element,omitempty" jsonschema:"what the element is, in words (optional)"`
	}
	clickIn struct {
		Target      string   `json:"target,omitempty" jsonschema:"the element: a ref from browser_snapshot (like e12) or a CSS selector"`
		Ref         string   `json:"ref,omitempty" jsonschema:"older name of target: a ref from browser_snapshot"`
		Element     string   `json:"element,omitempty" jsonschema:"what the element is, in words (optional)"`
		DoubleClick bool     `json:"doubleClick,omitempty" jsonschema:"double-click"`
		Button      string   `json:"button,omitempty" jsonschema:"left (default), right or middle"`
		Modifiers   []string `json:"modifiers,omitempty" jsonschema:"modifier keys held during the click: Alt, Control, ControlOrMeta, Meta, Shift"`
	}
	typeIn struct {
		Target  string `json:"target,omitempty" jsonschema:"the element: a ref from browser_snapshot (like e12) or a CSS selector"`
		Ref     string `json:"ref,omitempty" jsonschema:"older name of target: a ref from browser_snapshot"`
		Element string `json:"element,omitempty" jsonschema:"what the element is, in words (optional)"`
		Text    string `json:"text" jsonschema:"the text; it replaces the field's content"`
		Submit  bool   `json:"submit,omitempty" jsonschema:"press Enter afterwards"`
		Slowly  bool   `json:"slowly,omitempty" jsonschema:"type one character at a time (key events for each), for pages that react to keys"`
	}
	selectIn struct {
		Target  string   `json:"target,omitempty" jsonschema:"the <select>: a ref from browser_snapshot or a CSS selector"`
		Ref     string   `json:"ref,omitempty" jsonschema:"older name of target: a ref from browser_snapshot"`
		Element string   `json:"element,omitempty" jsonschema:"what the element is, in words (optional)"`
		Values  []string `json:"values" jsonschema:"values or labels of the options to select"`
	}
	fillField struct {
		Element string `json:"element,omitempty" jsonschema:"what the field is, in words (optional)"`
		Target  string `json:"target,omitempty" jsonschema:"the field: a ref from browser_snapshot or a CSS selector"`
		Ref     string `json:"ref,omitempty" jsonschema:"older name of target"`
		Name    string `json:"name,omitempty" jsonschema:"the field's name, in words"`
		Type    string `json:"type,omitempty" jsonschema:"textbox (default), checkbox, radio, combobox or slider"`
		Value   string `json:"value" jsonschema:"the text; true or false for a checkbox or radio; the option for a combobox"`
	}
	fillIn struct {
		Fields []fillField `json:"fields" jsonschema:"the fields to fill, in order"`
	}
	dragIn struct {
		StartTarget  string `json:"startTarget,omitempty" jsonschema:"the element to drag: a snapshot ref or a CSS selector"`
		StartRef     string `json:"startRef,omitempty" jsonschema:"older name of startTarget"`
		StartElement string `json:"startElement,omitempty" jsonschema:"the element to drag, in words (optional)"`
		EndTarget    string `json:"endTarget,omitempty" jsonschema:"where to drop it: a snapshot ref or a CSS selector"`
		EndRef       string `json:"endRef,omitempty" jsonschema:"older name of endTarget"`
		EndElement   string `json:"endElement,omitempty" jsonschema:"where to drop it, in words (optional)"`
	}
	keyIn struct {
		Key string `json:"key" jsonschema:"a key (Enter, Tab, ArrowDown, Escape, a character) or a combination like Control+a"`
	}
	waitIn struct {
		Text     string  `json:"text,omitempty" jsonschema:"wait until this text appears"`
		TextGone string  `json:"textGone,omitempty" jsonschema:"wait until this text disappears"`
		Time     float64 `json:"time,omitempty" jsonschema:"seconds to wait (at most 30)"`
	}
	tabsIn struct {
		Action          string `json:"action" jsonschema:"list, new, select or close"`
		Index           *int   `json:"index,omitempty" jsonschema:"the tab's index from list (select; close defaults to the current tab)"`
		URL             string `json:"url,omitempty" jsonschema:"for new: the URL to open in it"`
		IsolatedContext string `json:"isolatedContext,omitempty" jsonschema:"only \"default\" (or omitted): each user has one browser context here"`
	}
	resizeIn struct {
		Width  int `json:"width" jsonschema:"viewport width in CSS pixels"`
		Height int `json:"height" jsonschema:"viewport height in CSS pixels"`
	}
	screenshotIn struct {
		Target   string `json:"target,omitempty" jsonschema:"one element to capture: a snapshot ref or a CSS selector (omit for the viewport)"`
		Ref      string `json:"ref,omitempty" jsonschema:"older name of target"`
		Element  string `json:"element,omitempty" jsonschema:"what the element is, in words (optional)"`
		FullPage bool   `json:"fullPage,omitempty" jsonschema:"the whole page (its top part when very tall) instead of the viewport; not with target"`
		Type     string `json:"type,omitempty" jsonschema:"png (default), jpeg or webp"`
		Scale    string `json:"scale,omitempty" jsonschema:"css (default: one image pixel per CSS pixel) or device (device pixels)"`
		Filename string `json:"filename,omitempty" jsonschema:"ignored: results are returned inline, never written to files"`
	}
	evaluateIn struct {
		Function   string `json:"function,omitempty" jsonschema:"a JavaScript function like () => document.title, or (element) => element.textContent with target"`
		Expression string `json:"expression,omitempty" jsonschema:"or an expression like document.title"`
		Target     string `json:"target,omitempty" jsonschema:"an element to pass to the function: a snapshot ref or a CSS selector"`
		Element    string `json:"element,omitempty" jsonschema:"what the element is, in words (optional)"`
		Filename   string `json:"filename,omitempty" jsonschema:"ignored: results are returned inline, never written to files"`
	}
	snapshotIn struct {
		Target   string `json:"target,omitempty" jsonschema:"only this element's part of the outline: a snapshot ref or a CSS selector"`
		Depth    int    `json:"depth,omitempty" jsonschema:"show at most this many levels of the tree (omit for all)"`
		Boxes    bool   `json:"boxes,omitempty" jsonschema:"add [box=x,y,width,height] (viewport CSS pixels) to elements with a ref"`
		Filename string `json:"filename,omitempty" jsonschema:"ignored: results are returned inline, never written to files"`
	}
	consoleIn struct {
		Level    string `json:"level,omitempty" jsonschema:"error, warning, info (default) or debug; each level includes the more severe ones"`
		All      bool   `json:"all,omitempty" jsonschema:"all kept messages of the tab, not only those since the last navigation"`
		Filename string `json:"filename,omitempty" jsonschema:"ignored: results are returned inline, never written to files"`
	}
	uploadIn struct {
		Target  string   `json:"target,omitempty" jsonschema:"the file input: a snapshot ref or a CSS selector"`
		Ref     string   `json:"ref,omitempty" jsonschema:"older name of target"`
		Element string   `json:"element,omitempty" jsonschema:"what the element is, in words (optional)"`
		Paths   []string `json:"paths" jsonschema:"absolute paths of files inside the operator's upload directory"`
	}
	dropIn struct {
		Target  string            `json:"target,omitempty" jsonschema:"the element to drop onto: a snapshot ref or a CSS selector"`
		Ref     string            `json:"ref,omitempty" jsonschema:"older name of target"`
		Element string            `json:"element,omitempty" jsonschema:"what the element is, in words (optional)"`
		Paths   []string          `json:"paths,omitempty" jsonschema:"absolute paths of files inside the operator's upload directory to drop"`
		Data    map[string]string `json:"data,omitempty" jsonschema:"data to drop, MIME type to text, like {\"text/plain\": \"hello\"}"`
	}
	noIn struct{}
)

func (in uploadIn) target() string { return pick(in.Target, in.Ref) }

// ignoredFile is the note for a filename argument: @playwright/mcp writes
// results to files, the guard never does (DESIGN: results are inline).
func ignoredFile(name string) string {
	if name == "" {
		return ""
	}
	return "\n(filename was ignored: cdpguard returns results inline and writes no files.)"
}

func (s *Server) addTools() {
	note := "\n\n" + s.instructions()
	addTool(s, "browser_navigate", "Open a URL in the current tab. It returns no page content: to read a page, call browser_read with url instead (it opens and reads in one call)."+note, false, s.toolNavigate)
	addTool(s, "browser_navigate_back", "Go back to the previous page of the current tab.", false, s.toolBack)
	addTool(s, "browser_read", "Read a page's main text (no navigation, ads or scripts), in sections of 30,000 characters. Pass url to open and read in one call; omit it to read the current page; pass offset to continue a long page."+note, true, s.toolRead)
	addTool(s, "browser_snapshot", "Accessibility outline of the current page with [ref=eN] on elements an action can target; target and depth show part of it. To read text use browser_read, which is far shorter.", true, s.toolSnapshot)
	addTool(s, "browser_find", "Search the current page's accessibility outline for text (case-insensitive) or a regex (\"/error/i\" for flags); returns each match under its path from the root, with its ref. Cheaper than a whole browser_snapshot to locate an element.", true, s.toolFind)
	addTool(s, "browser_click", "Click an element (real mouse events).", false, s.toolClick)
	addTool(s, "browser_type", "Type text into a text field (replacing its content); submit presses Enter.", false, s.toolType)
	addTool(s, "browser_fill_form", "Fill several form fields in one call.", false, s.toolFillForm)
	addTool(s, "browser_select_option", "Select options of a <select> by value or label.", false, s.toolSelect)
	addTool(s, "browser_press_key", "Press a key or combination (Control+a) in the focused element.", false, s.toolKey)
	addTool(s, "browser_hover", "Move the mouse over an element.", false, s.toolHover)
	addTool(s, "browser_drag", "Drag an element onto another.", false, s.toolDrag)
	addTool(s, "browser_handle_dialog", "Answer the JavaScript dialog (alert, confirm, prompt) the page is showing.", false, s.toolHandleDialog)
	addTool(s, "browser_wait_for", "Wait for text to appear or disappear, or for a number of seconds (at most 30).", true, s.toolWait)
	addTool(s, "browser_tabs", "List, open (optionally at url), select or close tabs.", false, s.toolTabs)
	addTool(s, "browser_resize", "Resize the current tab's viewport.", false, s.toolResize)
	addTool(s, "browser_take_screenshot", "Screenshot of the current tab (viewport, fullPage or one element), scaled to bounds. To read text use browser_read.", true, s.toolScreenshot)
	addTool(s, "browser_console_messages", "The current tab's console messages and errors since its last navigation (all: every kept one, the last 200), at level or more severe.", true, s.toolConsole)
	addTool(s, "browser_network_requests", "A numbered list of the current tab's requests since its last navigation, with those cdpguard blocked (host and reason). browser_network_request with the number shows one in full.", true, s.toolNetwork)
	addTool(s, "browser_network_request", "Full details (headers and body) of one request of the current tab by its number in browser_network_requests, or one part; a request cdpguard blocked shows the guard's verdict.", true, s.toolNetworkRequest)
	addTool(s, "browser_emulate_media", "Emulate CSS media features of the current tab (prefers-color-scheme and others) or the media type. Omitted arguments stay as they are; \"\" clears an override.", false, s.toolEmulateMedia)
	addTool(s, "browser_evaluate", "Run JavaScript (a function or an expression) in the current page, or a function on one element (target), and return its JSON result. Nothing runs outside the browser.", false, s.toolEvaluate)
	addTool(s, "browser_close", "Close the browser: the user's tabs, cookies and storage are discarded. The next browser_navigate starts afresh.", false, s.toolClose)
	if s.opts.UploadEnabled {
		addTool(s, "browser_file_upload", "Set the files of a file input (target; omitted: the page's file input); the paths must be inside the operator's upload directory.", false, s.toolUpload)
		addTool(s, "browser_drop", "Drop files (inside the operator's upload directory) or MIME-typed data onto an element, as if dragged from outside the page.", false, s.toolDrop)
	}
}

// singleTypes gives every schema property one JSON type: some clients'
// schema converters take only a single "type" and drop a property typed
// ["null", "array"]. Absent still means nil/zero to the handler.
func singleTypes(sc *jsonschema.Schema) {
	if sc == nil {
		return
	}
	if len(sc.Types) > 0 {
		var keep []string
		for _, ty := range sc.Types {
			if ty != "null" {
				keep = append(keep, ty)
			}
		}
		if len(keep) == 1 {
			sc.Type, sc.Types = keep[0], nil
		}
	}
	for _, p := range sc.Properties {
		singleTypes(p)
	}
	singleTypes(sc.Items)
}
