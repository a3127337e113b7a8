package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
	mcp.AddTool(s.mcp, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (res *mcp.CallToolResult, _ any, err error) {
		var hdr map[string][]string
		if req.Extra != nil {
			hdr = req.Extra.Header
		}
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
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
		res, err = h(ctx, u, in)
		notes := u.takeNotes()
		if errors.Is(err, ErrClosed) {
			// This call reported the loss; the next one starts afresh.
			u.reset()
			err = fmt.Errorf("%w; the next call opens a new browser connection (tabs are gone if the browser restarted)", err)
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
		Element string `json:"element" jsonschema:"human-readable description of the element, for the log"`
		Ref     string `json:"ref" jsonschema:"the element's ref from the last browser_snapshot, like e12"`
	}
	clickIn struct {
		Element     string `json:"element" jsonschema:"human-readable description of the element"`
		Ref         string `json:"ref" jsonschema:"the element's ref from the last browser_snapshot"`
		DoubleClick bool   `json:"doubleClick,omitempty" jsonschema:"double-click instead of a single click"`
		Button      string `json:"button,omitempty" jsonschema:"left (default), right or middle"`
	}
	typeIn struct {
		Element string `json:"element" jsonschema:"human-readable description of the element"`
		Ref     string `json:"ref" jsonschema:"the element's ref from the last browser_snapshot"`
		Text    string `json:"text" jsonschema:"the text to type; it replaces the field's content"`
		Submit  bool   `json:"submit,omitempty" jsonschema:"press Enter afterwards"`
	}
	selectIn struct {
		Element string   `json:"element" jsonschema:"human-readable description of the element"`
		Ref     string   `json:"ref" jsonschema:"the <select>'s ref from the last browser_snapshot"`
		Values  []string `json:"values" jsonschema:"values or labels of the options to select"`
	}
	keyIn struct {
		Key string `json:"key" jsonschema:"a key name such as Enter, Tab, ArrowDown, Escape, or a single character"`
	}
	waitIn struct {
		Text     string  `json:"text,omitempty" jsonschema:"wait until this text appears"`
		TextGone string  `json:"textGone,omitempty" jsonschema:"wait until this text disappears"`
		Time     float64 `json:"time,omitempty" jsonschema:"seconds to wait (at most 30)"`
	}
	tabsIn struct {
		Action string `json:"action" jsonschema:"list, new, select or close"`
		Index  *int   `json:"index,omitempty" jsonschema:"the tab's index from list (select; close defaults to the current tab)"`
	}
	screenshotIn struct {
		FullPage bool `json:"fullPage,omitempty" jsonschema:"capture the whole scrollable page instead of the viewport"`
	}
	evaluateIn struct {
		Function string `json:"function" jsonschema:"a JavaScript function, like () => document.title; it runs inside the page, never outside the browser"`
	}
	uploadIn struct {
		Element string   `json:"element" jsonschema:"human-readable description of the file input"`
		Ref     string   `json:"ref" jsonschema:"the file input's ref from the last browser_snapshot"`
		Paths   []string `json:"paths" jsonschema:"absolute paths of files inside the operator's upload directory"`
	}
	noIn struct{}
)

func (s *Server) addTools() {
	note := "\n\n" + s.instructions()
	addTool(s, "browser_navigate", "Open a URL in the current tab. It returns no page content: to read a page, call browser_read with url instead (it opens and reads in one call)."+note, false, s.toolNavigate)
	addTool(s, "browser_navigate_back", "Go back to the previous page of the current tab.", false, s.toolBack)
	addTool(s, "browser_read", "Read a page's main text (no navigation, ads or scripts), in sections of 30,000 characters. Pass url to open and read in one call; omit it to read the current page; pass offset to continue a long page."+note, true, s.toolRead)
	addTool(s, "browser_snapshot", "Accessibility outline of the current page (roles, names, values, states, links with URLs). Elements an action can target carry [ref=eN]; pass the ref to browser_click, browser_type, browser_select_option or browser_hover. To read a page's text use browser_read, which is far shorter.", true, s.toolSnapshot)
	addTool(s, "browser_click", "Click an element by its ref from browser_snapshot (real mouse events, after scrolling it into view).", false, s.toolClick)
	addTool(s, "browser_type", "Type text into an editable element by its ref (replacing its content); submit presses Enter.", false, s.toolType)
	addTool(s, "browser_select_option", "Select options of a <select> by its ref, by value or label.", false, s.toolSelect)
	addTool(s, "browser_press_key", "Press a key in the current page (the focused element gets it).", false, s.toolKey)
	addTool(s, "browser_hover", "Move the mouse over an element by its ref.", false, s.toolHover)
	addTool(s, "browser_wait_for", "Wait for text to appear or disappear, or for a number of seconds (at most 30).", true, s.toolWait)
	addTool(s, "browser_tabs", "List, open, select or close tabs. action: list | new | select | close; index for select and close.", false, s.toolTabs)
	addTool(s, "browser_take_screenshot", "Screenshot of the current tab as a PNG image (viewport, or fullPage). To read text use browser_read.", true, s.toolScreenshot)
	addTool(s, "browser_console_messages", "The current tab's console messages and uncaught errors since it was opened (the last 200).", true, s.toolConsole)
	addTool(s, "browser_evaluate", "Run a JavaScript function inside the current page and return its JSON result. It runs in the page only, under the same allowlist; nothing runs outside the browser.", false, s.toolEvaluate)
	addTool(s, "browser_close", "Close the browser: the user's tabs, cookies and storage are discarded at once. The next browser_navigate starts afresh.", false, s.toolClose)
	if s.opts.UploadEnabled {
		addTool(s, "browser_file_upload", "Set the files of a file input by its ref; the paths must be inside the operator's upload directory.", false, s.toolUpload)
	}
}
