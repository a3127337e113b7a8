package isolation

import (
	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/users"
)

// filterTargets keeps only the user's web-content targets in a
// Target.getTargets reply, shown as not attached unless agent a holds a
// session to them.
func (i *Isolator) filterTargets(c *Conn, a Agent) func(result, errRaw []byte) ([]byte, []byte) {
	return func(result, errRaw []byte) ([]byte, []byte) {
		if len(errRaw) > 0 {
			return result, errRaw
		}
		var r struct {
			TargetInfos []map[string]jsonv2.Value `json:"targetInfos"`
		}
		if err := cdpmsg.UnmarshalBrowser(result, &r); err != nil {
			return nil, replyError("Target.getTargets", "unreadable reply")
		}
		kept := []map[string]jsonv2.Value{}
		for _, t := range r.TargetInfos {
			var ctxID string
			_ = cdpmsg.UnmarshalBrowser(t["browserContextId"], &ctxID)
			var typ, url string
			_ = cdpmsg.UnmarshalBrowser(t["type"], &typ)
			_ = cdpmsg.UnmarshalBrowser(t["url"], &url)
			if ctxID != "" && i.o.Users.OwnsContext(c.User, ctxID) && firewall.NotWeb(typ, url) == "" {
				var id string
				_ = cdpmsg.UnmarshalBrowser(t["targetId"], &id)
				if !attached(a, id) {
					t["attached"] = jsonv2.Value("false")
				}
				kept = append(kept, t)
			}
		}
		out, err := cdpmsg.MarshalBrowser(map[string]any{"targetInfos": kept})
		if err != nil {
			return nil, replyError("Target.getTargets", "cannot filter targets")
		}
		return out, nil
	}
}

// filterContexts shows a user only the contexts the user created; the
// user's primary context is the client's default context and stays unnamed.
func (i *Isolator) filterContexts(u *users.User) func(result, errRaw []byte) ([]byte, []byte) {
	return func(result, errRaw []byte) ([]byte, []byte) {
		if len(errRaw) > 0 {
			return result, errRaw
		}
		var r struct {
			BrowserContextIDs []string `json:"browserContextIds"`
		}
		if err := cdpmsg.UnmarshalBrowser(result, &r); err != nil {
			return nil, replyError("Target.getBrowserContexts", "unreadable reply")
		}
		kept := []string{}
		for _, id := range r.BrowserContextIDs {
			if id != u.Primary && i.o.Users.OwnsContext(u, id) {
				kept = append(kept, id)
			}
		}
		out, _ := jsonv2.Marshal(map[string]any{"browserContextIds": kept})
		return out, nil
	}
}

// replyError is a CDP error object for a reply hook that cannot pass the
// browser's reply on.
func replyError(method, why string) []byte {
	return cdpmsg.AppendErrorObject(nil, cdpmsg.CodeServerError, cdpmsg.Refusal(method, why))
}
