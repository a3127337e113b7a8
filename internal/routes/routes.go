// Package routes routes the guard's HTTP endpoint: Chrome's /json/* and
// /devtools/* surface plus the guard's own paths, each to the handler that
// answers it, after the refusals of what a web page could send
// (internal/httpgate). It holds no state of its own.
package routes

import (
	"net/http"
	"strings"

	"github.com/cdpguard/cdpguard/internal/devtoolsjson"
	"github.com/cdpguard/cdpguard/internal/httpgate"
)

// Table is the handlers of the endpoint's paths.
type Table struct {
	Gate    func() httpgate.Gate // read at each request: the egress proxy starts after the routes exist
	Ready   func() bool          // GET /readyz
	Policy  http.HandlerFunc     // GET /policy
	Read    http.HandlerFunc     // GET /read
	Metrics http.Handler         // GET /metrics
	JSON    *devtoolsjson.Handler
	MCP     http.Handler // /mcp
	// Agent upgrades to an agent's WebSocket; targetID is "" for a
	// browser connection.
	Agent func(w http.ResponseWriter, r *http.Request, targetID string)
}

// ServeHTTP answers one request of the endpoint. A web page must not be able
// to drive the guard, so requests whose Host is not an IP literal,
// localhost or a --public-host are refused, and so are WebSocket upgrades
// that carry an Origin (Gate).
func (rt *Table) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rt.Gate().Refuse(w, r) {
		return
	}
	path := r.URL.Path
	switch {
	case path == "/healthz":
		devtoolsjson.WriteText(w, http.StatusOK, "ok")
	case path == "/readyz":
		if rt.Ready() {
			devtoolsjson.WriteText(w, http.StatusOK, "ok")
		} else {
			devtoolsjson.WriteText(w, http.StatusServiceUnavailable, "not ready")
		}
	case path == "/policy":
		rt.Policy(w, r)
	case path == "/read":
		rt.Read(w, r)
	case path == "/metrics":
		rt.Metrics.ServeHTTP(w, r)
	case strings.HasSuffix(path, "/json/version") || strings.HasSuffix(path, "/json/version/"):
		rt.JSON.Version(w, r)
	case path == "/json" || path == "/json/" || path == "/json/list" || path == "/json/list/":
		rt.JSON.List(w, r)
	case path == "/json/protocol" || path == "/json/protocol/":
		rt.JSON.Protocol(w, r)
	case strings.HasPrefix(path, "/json/new"):
		rt.JSON.NewTab(w, r)
	case strings.HasPrefix(path, "/json/close/"):
		rt.JSON.Close(w, r, strings.TrimPrefix(path, "/json/close/"))
	case strings.HasPrefix(path, "/json/activate/"):
		rt.JSON.Activate(w, r, strings.TrimPrefix(path, "/json/activate/"))
	case path == "/mcp" || path == "/mcp/":
		rt.MCP.ServeHTTP(w, r)
	case strings.HasPrefix(path, "/devtools/browser/"):
		// Any id is accepted (Chrome 404s on a foreign one): behind a load
		// balancer a client reads /json/version from one instance, often
		// without the user header (chromedp), and its WebSocket is hashed
		// to another (e2e/haproxy_test.go). The id is no secret.
		if id := strings.TrimPrefix(path, "/devtools/browser/"); id == "" || strings.Contains(id, "/") {
			http.Error(w, "cdpguard: bad browser id", http.StatusNotFound)
			return
		}
		rt.Agent(w, r, "")
	case strings.HasPrefix(path, "/devtools/page/"):
		id := strings.TrimPrefix(path, "/devtools/page/")
		if id == "" || strings.Contains(id, "/") {
			http.Error(w, "cdpguard: bad target id", http.StatusNotFound)
			return
		}
		rt.Agent(w, r, id)
	default:
		http.NotFound(w, r)
	}
}
