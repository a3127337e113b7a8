package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/target"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func (s *Server) toolTabs(ctx context.Context, u *user, in tabsIn) (*mcp.CallToolResult, error) {
	if err := u.connect(ctx); err != nil {
		return nil, err
	}
	if _, err := u.takePopups(ctx); err != nil {
		return nil, err
	}
	ps, err := u.pages(ctx)
	if err != nil {
		return nil, err
	}
	pick := func() (*target.Info, error) {
		if in.Index == nil {
			return nil, errors.New("give index (from browser_tabs list)")
		}
		if *in.Index < 0 || *in.Index >= len(ps) {
			return nil, fmt.Errorf("there is no tab %d; there are %d tabs (0 to %d)", *in.Index, len(ps), len(ps)-1)
		}
		return ps[*in.Index], nil
	}
	var head string
	switch in.Action {
	case "", "list":
	case "new":
		if in.IsolatedContext != "" && in.IsolatedContext != "default" {
			return nil, fmt.Errorf("isolatedContext %q is not available: each user has one browser context here (its cookies and storage are the user's, apart from every other user's); omit isolatedContext", clip(in.IsolatedContext, 60))
		}
		if in.URL != "" {
			if err := s.checkURL(u.key, in.URL); err != nil {
				return nil, err
			}
		}
		t, err := u.newTab(ctx)
		if err != nil {
			return nil, err
		}
		if err := u.frontTab(ctx, t); err != nil {
			return nil, err
		}
		if in.URL != "" {
			if err := u.navigate(ctx, t, in.URL, 0); err != nil {
				return nil, err
			}
		}
	case "select":
		p, err := pick()
		if err != nil {
			return nil, err
		}
		t, err := u.attach(ctx, p.TargetID)
		if err != nil {
			return nil, err
		}
		if err := u.frontTab(ctx, t); err != nil {
			return nil, err
		}
		if d := u.openDialogOf(t); d != nil {
			head = "This tab shows " + d.info.describe() + "; answer it with browser_handle_dialog.\n"
		}
	case "close":
		var id target.ID
		if in.Index == nil && u.cur != nil {
			id = u.cur.id
		} else {
			p, err := pick()
			if err != nil {
				return nil, err
			}
			id = p.TargetID
		}
		if err := call0(ctx, Session{p: u.pipe}, target.CloseTarget, target.CloseTargetParams{TargetID: id}); err != nil {
			return nil, err
		}
		u.forget(id)
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if ps, err = u.pages(ctx); err != nil || !hasTarget(ps, id) {
				break // closing is asynchronous in Chrome
			}
		}
	default:
		return nil, fmt.Errorf("action %q is not one of list, new, select, close", clip(in.Action, 20))
	}
	if ps, err = u.pages(ctx); err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(head)
	if len(ps) == 0 {
		b.WriteString("No tabs are open.")
	}
	for i, p := range ps {
		mark := " "
		if u.cur != nil && u.cur.id == p.TargetID {
			mark = "*"
		}
		fmt.Fprintf(&b, "%s %d: %s (%s)\n", mark, i, clip(p.Title, 200), p.URL)
	}
	return textResult(strings.TrimRight(b.String(), "\n")), nil
}

// toolResize sets the current tab's viewport size.
func (s *Server) toolResize(ctx context.Context, u *user, in resizeIn) (*mcp.CallToolResult, error) {
	if in.Width < 200 || in.Width > 4000 || in.Height < 200 || in.Height > 4000 {
		return nil, errors.New("width and height must be between 200 and 4000 pixels")
	}
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	if err := call0(ctx, t.s, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: int64(in.Width), Height: int64(in.Height), DeviceScaleFactor: 1}); err != nil {
		return nil, err
	}
	return u.actionResult(ctx, t)
}
