package firewall

import (
	"strings"
	"testing"
)

// TestCheckSizes: the emulation and screenshot rows refuse the red team's
// 1e7 x 1e7 at scale 10, and pass what clients send.
func TestCheckSizes(t *testing.T) {
	cases := []struct {
		method, params, want string // want: "" passes, else a part of the refusal
	}{
		{"Emulation.setDeviceMetricsOverride", `{"width":10000000,"height":10000000,"deviceScaleFactor":10,"mobile":false}`, "width is 1e+07"},
		{"Emulation.setDeviceMetricsOverride", `{"width":1280,"height":720,"deviceScaleFactor":10,"mobile":false}`, "deviceScaleFactor is 10"},
		{"Emulation.setDeviceMetricsOverride", `{"width":8000,"height":720,"deviceScaleFactor":3,"mobile":false}`, "width × deviceScaleFactor is 24000"},
		{"Emulation.setDeviceMetricsOverride", `{"width":1280,"height":720,"deviceScaleFactor":2,"mobile":false}`, ""},
		{"Emulation.setDeviceMetricsOverride", `{"width":0,"height":0,"deviceScaleFactor":0,"mobile":false}`, ""}, // 0: no override
		{"Emulation.setDeviceMetricsOverride", `{"width":-5,"height":10,"deviceScaleFactor":1,"mobile":false}`, "width is -5"},
		{"Emulation.setDeviceMetricsOverride", `{"width":"big","height":10,"deviceScaleFactor":1,"mobile":false}`, "must be a number"},
		{"Emulation.setVisibleSize", `{"width":100000,"height":10}`, "width is 100000"},
		{"Page.captureScreenshot", `{"format":"png"}`, ""},
		{"Page.captureScreenshot", `{"clip":{"x":0,"y":0,"width":1280,"height":30000,"scale":1},"captureBeyondViewport":true}`, ""},
		{"Page.captureScreenshot", `{"clip":{"x":0,"y":0,"width":1280,"height":20000,"scale":2}}`, "clip.height × clip.scale is 40000"},
		{"Page.captureScreenshot", `{"clip":{"x":0,"y":0,"width":100,"height":100,"scale":10}}`, "clip.scale is 10"},
	}
	for _, c := range cases {
		r, _ := Lookup(c.method, false)
		if r.Action != CheckSizes {
			t.Fatalf("%s: action %v, want CheckSizes", c.method, r.Action)
		}
		got := SizeRefusal([]byte(c.params), r.Sizes)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s %s: %q, want %q", c.method, c.params, got, c.want)
		}
	}
}
