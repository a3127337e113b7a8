package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// emulateIn are browser_emulate_media's arguments, named as
// @playwright/mcp names them. A nil field leaves its override as it is;
// "" clears it (@playwright/mcp's null: a schema property has one type
// here).
type emulateIn struct {
	ColorScheme   *string `json:"colorScheme,omitempty" jsonschema:"prefers-color-scheme: light or dark; \"\" clears the override"`
	ReducedMotion *string `json:"reducedMotion,omitempty" jsonschema:"prefers-reduced-motion: reduce or no-preference; \"\" clears the override"`
	ForcedColors  *string `json:"forcedColors,omitempty" jsonschema:"forced-colors: active or none; \"\" clears the override"`
	Contrast      *string `json:"contrast,omitempty" jsonschema:"prefers-contrast: more or no-preference; \"\" clears the override"`
	Media         *string `json:"media,omitempty" jsonschema:"the CSS media type: screen or print; \"\" clears the override"`
}

// mediaArgs are the media features browser_emulate_media sets, by argument.
var mediaArgs = []struct {
	arg, feature string
	values       []string
	get          func(emulateIn) *string
}{
	{"colorScheme", "prefers-color-scheme", []string{"light", "dark"}, func(in emulateIn) *string { return in.ColorScheme }},
	{"reducedMotion", "prefers-reduced-motion", []string{"reduce", "no-preference"}, func(in emulateIn) *string { return in.ReducedMotion }},
	{"forcedColors", "forced-colors", []string{"active", "none"}, func(in emulateIn) *string { return in.ForcedColors }},
	{"contrast", "prefers-contrast", []string{"more", "no-preference"}, func(in emulateIn) *string { return in.Contrast }},
	{"media", "media", []string{"screen", "print"}, func(in emulateIn) *string { return in.Media }},
}

// toolEmulateMedia sets the tab's media overrides. CDP's
// Emulation.setEmulatedMedia replaces them all, so the tab keeps what
// earlier calls set and each call sends the merged set.
func (s *Server) toolEmulateMedia(ctx context.Context, u *user, in emulateIn) (*mcp.CallToolResult, error) {
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	next := map[string]string{}
	for k, v := range t.media {
		next[k] = v
	}
	var changed []string
	for _, a := range mediaArgs {
		v := a.get(in)
		if v == nil {
			continue
		}
		switch {
		case *v == "" || *v == "null":
			delete(next, a.feature)
			changed = append(changed, a.arg+" cleared")
		case slices.Contains(a.values, *v):
			next[a.feature] = *v
			changed = append(changed, a.arg+"="+*v)
		default:
			return nil, fmt.Errorf("%s %q is not one of %s (or \"\" to clear)", a.arg, clip(*v, 30), strings.Join(a.values, ", "))
		}
	}
	if len(changed) == 0 {
		return nil, errors.New("give at least one of colorScheme, reducedMotion, forcedColors, contrast, media")
	}
	p := emulation.SetEmulatedMediaParams{Media: next["media"], Features: []*emulation.MediaFeature{}}
	var names []string
	for f := range next {
		if f != "media" {
			names = append(names, f)
		}
	}
	sort.Strings(names)
	for _, f := range names {
		p.Features = append(p.Features, &emulation.MediaFeature{Name: f, Value: next[f]})
	}
	if err := call0(ctx, t.s, emulation.SetEmulatedMedia, p); err != nil {
		return nil, err
	}
	t.media = next
	return textResult("Emulated media: " + strings.Join(changed, ", ") + ". It holds for this tab while the tools stay connected."), nil
}

// maxDropData bounds the data browser_drop carries.
const maxDropData = 1 << 20

// toolDrop drops files or data onto an element as a drag from outside the
// page would: dragEnter, dragOver and drop at its centre (the guard
// refuses files outside the upload directory).
func (s *Server) toolDrop(ctx context.Context, u *user, in dropIn) (*mcp.CallToolResult, error) {
	if len(in.Paths) == 0 && len(in.Data) == 0 {
		return nil, errors.New(`give at least one of "paths" or "data"`)
	}
	if len(in.Paths) > 20 || len(in.Data) > 20 {
		return nil, errors.New("paths and data take at most 20 entries each")
	}
	data := &input.DragData{Items: []*input.DragDataItem{}, Files: in.Paths, DragOperationsMask: 1 | 2 | 16}
	size := 0
	mimes := make([]string, 0, len(in.Data))
	for m := range in.Data {
		mimes = append(mimes, m)
	}
	sort.Strings(mimes)
	for _, m := range mimes {
		size += len(m) + len(in.Data[m])
		data.Items = append(data.Items, &input.DragDataItem{MimeType: m, Data: in.Data[m]})
	}
	if size > maxDropData {
		return nil, fmt.Errorf("data is %d bytes; the limit is %d", size, maxDropData)
	}
	res, err := s.onElement(ctx, u, pick(in.Target, in.Ref), false, quietWait, func(t *tab, el *element) error {
		for _, typ := range []input.DispatchDragEventType{input.DispatchDragEventTypeDragEnter, input.DispatchDragEventTypeDragOver, input.DispatchDragEventTypeDrop} {
			if err := call0(ctx, t.s, input.DispatchDragEvent, input.DispatchDragEventParams{Type: typ, X: el.x, Y: el.y, Data: data}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.Content = append(res.Content, &mcp.TextContent{Text: fmt.Sprintf("Dropped %d file(s) and %d data item(s) (%s).", len(in.Paths), len(mimes), strings.Join(mimes, ", "))})
	return res, nil
}
