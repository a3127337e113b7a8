// Package blocklog writes the canonical log line of a refused request:
// every refusal is logged once, by the guard, as msg="blocked" with exactly
// the Field keys, whichever layer refused it. Operators grep and alert on
// them (cdpguard re-exports the names); keep them stable.
package blocklog

import (
	"context"
	"log/slog"
	"net"
	"net/url"
	"strconv"

	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/egress"
	"github.com/cdpguard/cdpguard/internal/fetchdomain"
)

// The line's message and keys.
const (
	Msg               = "blocked"
	FieldURL          = "url"
	FieldHost         = "host"
	FieldReason       = "reason"
	FieldResourceType = "resource_type"
	FieldUser         = "user"
	FieldTarget       = "target"
	FieldLayer        = "layer"
)

// The layers named in the line's layer field.
const (
	LayerFetch       = "fetch"        // the browser-level Fetch judge
	LayerEgressProxy = "egress-proxy" // the egress proxy (WebSockets, preconnects, ...)
)

// Fetch logs the line for a request the Fetch judge refused. The target
// (and so the user, key) is known when owned: the request came from a
// tab's main frame, whose frame id is the target id.
func Fetch(log *slog.Logger, b fetchdomain.Block, key string, owned bool) {
	host := ""
	if u, err := url.Parse(b.URL); err == nil {
		host = u.Hostname()
	}
	user, target := "", ""
	if owned {
		user, target = key, b.FrameID
	}
	line(log, b.URL, host, b.Reason, b.ResourceType, user, target, LayerFetch)
}

// Proxy logs the line for a connection the egress proxy refused. The proxy
// sees connections, not tabs: target is empty, and user is set only for a
// user's own listener.
func Proxy(log *slog.Logger, r egress.Refusal, user string) {
	u := r.Host
	if r.Port != 0 {
		u = net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
	}
	line(log, u, r.Host, r.Reason, "Connection", user, "", LayerEgressProxy)
}

// line writes the line. The user and target are ids an agent or a header
// chose: they are cut to clip.Max bytes, so a long one cannot grow the log.
func line(log *slog.Logger, u, host, reason, resourceType, user, target, layer string) {
	log.LogAttrs(context.Background(), slog.LevelInfo, Msg,
		slog.String(FieldURL, u),
		slog.String(FieldHost, host),
		slog.String(FieldReason, reason),
		slog.String(FieldResourceType, resourceType),
		slog.String(FieldUser, clip.String(user)),
		slog.String(FieldTarget, clip.String(target)),
		slog.String(FieldLayer, layer),
	)
}
