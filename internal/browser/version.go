package browser

import "github.com/chromedp/cdproto/cdp/jsonv2"

// ParseVersion reads a Browser.getVersion result as a Version: an attached
// browser whose /json/version said nothing is asked over CDP.
func ParseVersion(res []byte) Version {
	var v struct {
		ProtocolVersion string `json:"protocolVersion"`
		Product         string `json:"product"`
		Revision        string `json:"revision"`
		UserAgent       string `json:"userAgent"`
		JSVersion       string `json:"jsVersion"`
	}
	_ = jsonv2.Unmarshal(res, &v)
	return Version{Browser: v.Product, ProtocolVersion: v.ProtocolVersion, UserAgent: v.UserAgent, V8Version: v.JSVersion, WebKitVersion: v.Revision}
}
