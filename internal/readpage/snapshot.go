package readpage

import (
	"context"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/runtime"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/reader"
	"github.com/cdpguard/cdpguard/js"
)

// maxHTML bounds the HTML the page script returns, in UTF-16 code units: a
// reply over the browser connection's message limit would end the
// connection for every user. JSON-escaped, 4 Mi units stay under 26 MB, and
// extraction stays around a second.
const maxHTML = 4 << 20

// hiddenPageChars is the least visible text under which a page is read
// again with its hidden text.
const hiddenPageChars = 100

// sparseChars is the visible text under which a read carries a note
// suggesting to wait for a text: the page may still be rendering.
const sparseChars = 200

// sparseNote is that note; %d is the number of characters read.
const sparseNote = "the page shows little text (%d characters); if it renders its content by script, it may not be there yet: wait for a text of the content to appear (browser_wait_for) and read again."

// snapshot reads the page's final URL, title and rendered DOM (js/read.js)
// in the reader's isolated world, without what is not rendered. A page
// that renders no main text (a body hidden until a blocked script would
// show it) is read again with everything in its DOM, and noted.
func (r *Reader) snapshot(ctx context.Context, session string) (page reader.Page, body string, notes []string, err error) {
	frame, err := r.mainFrame(ctx, session)
	if err != nil {
		return reader.Page{}, "", nil, err
	}
	for _, visibleOnly := range []bool{true, false} {
		var p struct {
			URL       string `json:"url"`
			Title     string `json:"title"`
			HTML      string `json:"html"`
			Truncated bool   `json:"truncated"`
		}
		if err := r.inWorld(ctx, session, frame.ID, "Runtime.callFunctionOn", map[string]any{
			"functionDeclaration": js.Read,
			"arguments":           []any{map[string]any{"value": visibleOnly}, map[string]any{"value": maxHTML}},
		}, &p); err != nil {
			return reader.Page{}, "", nil, err
		}
		if p.Truncated {
			notes = append(notes, fmt.Sprintf("the page is larger than %d million characters of HTML; only its first part was read.", maxHTML/1_000_000))
		}
		page = reader.Page{URL: p.URL, Title: p.Title, HTML: p.HTML}
		if body, err = reader.Extract(page); err != nil {
			return reader.Page{}, "", nil, err
		}
		if len(body) >= hiddenPageChars {
			if visibleOnly && len([]rune(body)) < sparseChars && webPage(p.URL) {
				notes = append(notes, fmt.Sprintf(sparseNote, len([]rune(body))))
			}
			break
		}
		if visibleOnly {
			if webPage(p.URL) {
				notes = append(notes, fmt.Sprintf(sparseNote, len([]rune(body))))
			}
			notes = append(notes, "the page shows almost no text; this is the text in its DOM, shown or not.")
		}
		if p.Truncated {
			break // too large to read twice
		}
	}
	return page, body, notes, nil
}

// webPage reports whether url is an http(s) page, the only kind the
// note suggesting to wait for a text is for (not about: or error pages).
func webPage(url string) bool {
	return strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://")
}

// inWorld runs a Runtime method (evaluate or callFunctionOn) in the
// reader's isolated world of frameID (made on first use in each document)
// and decodes the value it returns into out. The world has its own,
// pristine DOM prototypes: the page's scripts cannot replace what the code
// calls.
func (r *Reader) inWorld(ctx context.Context, session, frameID, method string, params map[string]any, out any) error {
	res, err := r.d.Browser.Call(ctx, session, "Page.createIsolatedWorld", map[string]any{"frameId": frameID, "worldName": r.d.World})
	if err != nil {
		return fmt.Errorf("reader world: %w", err)
	}
	var w struct {
		ID int64 `json:"executionContextId"`
	}
	if err := cdpmsg.UnmarshalBrowser(res, &w); err != nil {
		return fmt.Errorf("reader world: %w", err)
	}
	r.d.Worlds.MadeIn("", cdp.FrameID(frameID), runtime.ExecutionContextID(w.ID))
	if method == "Runtime.evaluate" {
		params["contextId"] = w.ID
	} else {
		params["executionContextId"] = w.ID
	}
	params["returnByValue"] = true
	res, err = r.d.Browser.Call(ctx, session, method, params)
	if err != nil {
		return fmt.Errorf("read the page: %w", err)
	}
	var v struct {
		Result struct {
			Value jsonv2.Value `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := cdpmsg.UnmarshalBrowser(res, &v); err != nil {
		return fmt.Errorf("read the page: %w", err)
	}
	if v.ExceptionDetails != nil {
		return fmt.Errorf("read the page: script failed: %s", v.ExceptionDetails.Text)
	}
	if err := cdpmsg.UnmarshalBrowser(v.Result.Value, out); err != nil {
		return fmt.Errorf("read the page: %w", err)
	}
	return nil
}
