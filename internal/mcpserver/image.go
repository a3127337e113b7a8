package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fullPageCut bounds a full-page capture's height at this many times the
// long-side bound (before scaling): the top of a very tall page at a
// readable scale, rather than all of it as a thin strip.
const fullPageCut = 2

// shot is one capture plan: a clip in CSS pixels and the output scale.
type shot struct {
	w, h, scale float64
	jpeg        bool
	quality     int64
}

// toolScreenshot captures the viewport or the page within the image
// bounds: at most ImageMaxSide pixels on the long side (scaled down), at
// most ImageMaxBytes base64-encoded (JPEG, then smaller, when PNG is too
// big); a very tall page is cut at the top part. The text says what was
// done.
func (s *Server) toolScreenshot(ctx context.Context, u *user, in screenshotIn) (*mcp.CallToolResult, error) {
	target := pick(in.Target, in.Ref)
	if target != "" && in.FullPage {
		return nil, errors.New("fullPage cannot be used with target: give one of them")
	}
	format := page.CaptureScreenshotFormat(in.Type)
	switch format {
	case "":
		format = page.CaptureScreenshotFormatPng
	case page.CaptureScreenshotFormatPng, page.CaptureScreenshotFormatJpeg, page.CaptureScreenshotFormatWebp:
	default:
		return nil, fmt.Errorf("type %q is not one of png, jpeg, webp", clip(in.Type, 20))
	}
	if in.Scale != "" && in.Scale != "css" && in.Scale != "device" {
		return nil, fmt.Errorf("scale %q is not one of css, device", clip(in.Scale, 20))
	}
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	var box *page.Viewport // the element's border box, in viewport CSS pixels
	if target != "" {
		// Scrolled into view and visible first (bounded), as an action's.
		_, err := u.prepare(ctx, t, target, false)
		u.release(ctx, t)
		if err != nil {
			return nil, err
		}
		id, err := u.resolveTarget(ctx, t, target)
		if err != nil {
			return nil, err
		}
		m, err := cdp.Call(ctx, t.s, dom.GetBoxModel, dom.GetBoxModelParams{BackendNodeID: id})
		if err != nil || m.Model == nil || len(m.Model.Border) != 8 {
			return nil, &PageError{Msg: fmt.Sprintf("the element %s has no box to capture (it is not rendered)", clip(target, 100))}
		}
		q := m.Model.Border
		x0, y0 := min(q[0], q[2], q[4], q[6]), min(q[1], q[3], q[5], q[7])
		box = &page.Viewport{X: x0, Y: y0, Width: max(q[0], q[2], q[4], q[6]) - x0, Height: max(q[1], q[3], q[5], q[7]) - y0}
	}
	// The deprecated visualViewport (device pixels) is read raw beside the
	// CSS one: their ratio is the device pixel ratio as Chrome applies it.
	var m struct {
		page.GetLayoutMetricsResult
		VisualViewport *page.VisualViewport `json:"visualViewport"`
	}
	if err := t.s.Call(ctx, page.CommandGetLayoutMetrics, nil, &m); err != nil {
		return nil, err
	}
	// Device pixels per CSS pixel, from Chrome's metrics (the page's own
	// devicePixelRatio could lie), clamped.
	dpr := 1.0
	if m.VisualViewport != nil && m.CSSVisualViewport != nil && m.CSSVisualViewport.ClientWidth > 0 {
		dpr = min(max(m.VisualViewport.ClientWidth/m.CSSVisualViewport.ClientWidth, 0.25), 4)
	}
	var x, y, w, h float64
	if m.CSSVisualViewport != nil {
		x, y = m.CSSVisualViewport.PageX, m.CSSVisualViewport.PageY
		w, h = m.CSSVisualViewport.ClientWidth, m.CSSVisualViewport.ClientHeight
	}
	fullH, what := h, "the viewport"
	if in.FullPage && m.CSSContentSize != nil {
		x, y = 0, 0
		w, h = m.CSSContentSize.Width, m.CSSContentSize.Height
		fullH, what = h, "the page"
	}
	if box != nil {
		// The clip is in page coordinates: the box plus the scroll.
		x, y, w, h = x+box.X, y+box.Y, box.Width, box.Height
		fullH, what = h, "the element "+clip(target, 100)
	}
	tall := in.FullPage || box != nil
	maxSide := float64(s.opts.ImageMaxSide)
	w = math.Min(w, maxSide*fullPageCut/dpr)
	if tall {
		h = math.Min(h, maxSide*fullPageCut/dpr)
	}
	if w < 1 || h < 1 {
		return nil, &PageError{Msg: "there is no visible area to capture"}
	}
	// css (the default): one image pixel per CSS pixel; device: device
	// pixels. Either within the long-side bound.
	base := 1 / dpr
	if in.Scale == "device" {
		base = 1
	}
	p := shot{w: w, h: h, scale: math.Min(base, maxSide/(math.Max(w, h)*dpr))}
	if format != page.CaptureScreenshotFormatPng {
		p.jpeg, p.quality = true, 80 // a lossy format asked for: start at quality 80
	}
	var data []byte
	for try := 0; ; try++ {
		params := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng, Clip: &page.Viewport{X: x, Y: y, Width: p.w, Height: p.h, Scale: p.scale}}
		if tall {
			params.CaptureBeyondViewport = ptr(true)
		}
		if p.jpeg {
			params.Format, params.Quality = page.CaptureScreenshotFormatJpeg, ptr(p.quality)
			if format == page.CaptureScreenshotFormatWebp {
				params.Format = format
			}
		}
		res, err := cdp.Call(ctx, t.s, page.CaptureScreenshot, params)
		if err != nil {
			return nil, err
		}
		data = res.Data
		enc := (len(data) + 2) / 3 * 4
		if enc <= s.opts.ImageMaxBytes || try == 4 {
			if enc > s.opts.ImageMaxBytes {
				return nil, &PageError{Msg: "the screenshot stays over the size bound even scaled down; use browser_read or browser_snapshot"}
			}
			break
		}
		if !p.jpeg {
			p.jpeg, p.quality = true, 80
			continue
		}
		// Smaller in proportion to the excess, with a margin.
		p.scale *= math.Sqrt(float64(s.opts.ImageMaxBytes)/float64(enc)) * 0.9
		p.quality = 70
	}
	mime := "image/png"
	if p.jpeg {
		mime = "image/jpeg"
		if format == page.CaptureScreenshotFormatWebp {
			mime = "image/webp"
		}
	}
	outW, outH := int(math.Round(p.w*dpr*p.scale)), int(math.Round(p.h*dpr*p.scale))
	text := fmt.Sprintf("Screenshot of %s: %.0f×%.0f CSS px at device pixel ratio %g, scaled to %.0f%% (%d×%d px, %s, %d bytes).",
		what, p.w, p.h, dpr, p.scale*dpr*100, outW, outH, mime, len(data))
	if tall && fullH > p.h+0.5 {
		text += fmt.Sprintf(" It is %.0f CSS px tall: only the top %.0f px were captured (%.0f px below were cut). Scroll and take viewport screenshots for the rest, or use browser_read for the text.", fullH, p.h, fullH-p.h)
	}
	text += ignoredFile(in.Filename)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}, &mcp.ImageContent{Data: data, MIMEType: mime}}}, nil
}
