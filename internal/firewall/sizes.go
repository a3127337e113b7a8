package firewall

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Size is one bound of CheckSizes: the number at Param (a dotted path into
// the params, "clip.width"), multiplied by the number at Times when set
// (absent: 1), must be at most Max. An absent Param passes.
type Size struct {
	Param, Times string
	Max          float64
}

// Sizes of the emulation and screenshot rows (why these numbers:
// docs/decisions/2026-12-02-bounds.md). maxDevicePixels is Chrome's usual
// maximum texture side; past it a capture is tiled and, at 20000x20000 CSS
// pixels and scale 4, did not answer within 15 s here.
const (
	maxViewport     = 10000 // CSS pixels of an emulated viewport or screen side
	maxScale        = 4     // device scale factor / page scale / screenshot scale
	maxDevicePixels = 16384 // a viewport side times its scale factor
	maxClipPixels   = 32768 // a screenshot clip side times its scale (full-page captures)
)

var viewportSizes = []Size{
	{Param: "width", Max: maxViewport}, {Param: "height", Max: maxViewport},
	{Param: "screenWidth", Max: maxViewport}, {Param: "screenHeight", Max: maxViewport},
	{Param: "deviceScaleFactor", Max: maxScale}, {Param: "scale", Max: maxScale},
	{Param: "width", Times: "deviceScaleFactor", Max: maxDevicePixels},
	{Param: "height", Times: "deviceScaleFactor", Max: maxDevicePixels},
}

var screenshotSizes = []Size{
	{Param: "clip.scale", Max: maxScale},
	{Param: "clip.width", Times: "clip.scale", Max: maxClipPixels},
	{Param: "clip.height", Times: "clip.scale", Max: maxClipPixels},
}

// SizeRefusal returns why params break one of sizes, or "" when they do
// not (or carry none of them). Unreadable params, or a size that is not a
// number, are refused.
func SizeRefusal(params []byte, sizes []Size) string {
	if len(params) == 0 {
		return ""
	}
	var in map[string]any
	if err := json.Unmarshal(params, &in); err != nil {
		return "unreadable params: " + err.Error()
	}
	for _, s := range sizes {
		v, ok, err := number(in, s.Param)
		if err != "" {
			return err
		}
		if !ok {
			continue
		}
		what := s.Param
		if s.Times != "" {
			m, ok, err := number(in, s.Times)
			if err != "" {
				return err
			}
			if ok && m > 1 {
				v *= m
				what += " × " + s.Times
			}
		}
		if v > s.Max || v < 0 {
			return fmt.Sprintf("%s is %g; the guard allows 0 to %g (a bigger surface stalls the browser for every user)", what, v, s.Max)
		}
	}
	return ""
}

// number finds the number at a dotted path; ok is false when it is absent.
func number(in map[string]any, path string) (v float64, ok bool, err string) {
	var cur any = in
	for part := range strings.SplitSeq(path, ".") {
		m, isMap := cur.(map[string]any)
		if !isMap {
			return 0, false, ""
		}
		if cur, ok = m[part]; !ok {
			return 0, false, ""
		}
	}
	f, isNum := cur.(float64)
	if !isNum {
		return 0, false, fmt.Sprintf("%s must be a number", path)
	}
	return f, true, ""
}
