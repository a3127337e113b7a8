package cdpguard

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/cdpguard/cdpguard/internal/admission"
	"github.com/cdpguard/cdpguard/internal/bounds"
	"github.com/cdpguard/cdpguard/internal/browser"
	"github.com/cdpguard/cdpguard/internal/controls"
	"github.com/cdpguard/cdpguard/internal/devtoolsjson"
	"github.com/cdpguard/cdpguard/internal/dialogs"
	"github.com/cdpguard/cdpguard/internal/egress"
	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/files"
	"github.com/cdpguard/cdpguard/internal/hostmap"
	"github.com/cdpguard/cdpguard/internal/isolation"
	"github.com/cdpguard/cdpguard/internal/mcpserver"
	"github.com/cdpguard/cdpguard/internal/outbox"
	"github.com/cdpguard/cdpguard/internal/pages"
	"github.com/cdpguard/cdpguard/internal/readpage"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/routes"
	"github.com/cdpguard/cdpguard/internal/rules"
	"github.com/cdpguard/cdpguard/internal/scopes"
	"github.com/cdpguard/cdpguard/internal/selfaddr"
	"github.com/cdpguard/cdpguard/internal/targets"
	"github.com/cdpguard/cdpguard/internal/users"
	"github.com/cdpguard/cdpguard/internal/worlds"
	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// The groups of the Guard's state (guard.go).

// browserSide is the browser connection and what the guard keeps about
// the browser.
type browserSide struct {
	mux      *relay.Mux
	proc     *browser.Process // nil when attached
	attached bool
	judge    *fetchdomain.Judge
	dialogs  *dialogs.Handler
	about    browserAbout    // what agents are told about the browser
	fx       *outbox.Queue   // browser sends decided on the read loop (internal/outbox)
	targets  *targets.Record // the browser's targets, fed by the read loop (internal/targets)
}

// features are the guard's features, each a package of internal/ wired in
// by a wire_*.go file.
type features struct {
	files  *files.Dirs         // the upload and download directories
	worlds *worlds.Worlds      // the guard's isolated worlds, hidden from agents
	rd     *readpage.Reader    // Guard.read, GET /read
	scopes *scopes.Table       // per-user session grants and proxy listeners
	ctl    *controls.Controls  // the human's controls; nil when off
	mcp    *mcpserver.Endpoint // /mcp; nil when off (wire_mcp.go)
	rs     *rules.Stage        // the pipeline's last stage: the row's check or rewrite
}

// netSide is where agents connect (the endpoint) and where pages go out
// (the egress proxy, the host map).
type netSide struct {
	ep        endpoint
	hosts     *hostmap.Map
	proxy     *egress.Proxy
	proxyAddr string
	proxyURL  string
}

// userSide is the pages and users, their isolation and their agent
// connections.
type userSide struct {
	pages  *pages.Registry     // session ↔ target ↔ frame ↔ context (internal/pages)
	users  *users.Registry     // context ↔ user
	iso    *isolation.Isolator // keeps each agent to its user's targets, contexts, windows
	agents *admission.Set      // the agent connections and their fairness shares
	// budget is the receive side of the byte budget (wire_bounds.go), made
	// on first use.
	budgetOnce sync.Once
	budget     *bounds.Budget
}

// lifecycle is the guard's life: ready, the context and goroutines it
// owns, and Close's once.
type lifecycle struct {
	ready atomic.Bool
	// barrier is Close's barrier: handlers and goroutines check ctx and add
	// to wg under it (enter, guardLife.GoOwned), Close takes it after cancelling ctx.
	barrier sync.Mutex
	ctx     context.Context // ends at Close; owns every goroutine of the guard
	stop    context.CancelFunc
	wg      sync.WaitGroup
	closed  closeState
}

// browserAbout is what agents are told about the browser.
type browserAbout struct {
	id      string // the browser id in /devtools/browser/<id>
	version browser.Version
}

// Version is what /json/version says about the browser (devtoolsjson.About):
// set before the guard serves (the launch, the dial or the set-up asked).
func (a *browserAbout) Version() browser.Version { return a.version }

// endpoint is where agents connect.
type endpoint struct {
	url        string                // the endpoint's base URL
	srv        *http.Server          // nil when a Supervisor serves the endpoint
	supervisor string                // set when a Supervisor serves the endpoint: its address
	json       *devtoolsjson.Handler // Chrome's /json/* (http.go)
	routes     *routes.Table         // the endpoint's paths (http.go)
	// self is every address the guard listens on (the endpoint, the egress
	// proxy's listeners): never a destination for pages (self.go).
	self *selfaddr.Set
}

// closeState makes Close run once and remembers its result.
type closeState struct {
	once sync.Once
	err  error
	done chan struct{}
}

// agentState is what the guard keeps of one agent connection
// (internal/admission).
type agentState = admission.Agent

// muxCaller is the guard's browser connection as the components keep it:
// they are built in newGuard, before the browser is launched or dialled,
// and start makes the mux once the connection exists, before the guard
// serves or reads an event. Each call goes to g.mux.
type muxCaller struct{ g *Guard }

// Call sends a command and waits for its reply (relay.Mux.Call).
func (m muxCaller) Call(ctx context.Context, sessionID, method string, params any) (jsonv2.Value, error) {
	if m.g.mux == nil {
		return nil, errNoBrowser // a guard never started (unit tests)
	}
	return m.g.mux.Call(ctx, sessionID, method, params)
}

// errNoBrowser is a call on a guard that was built but never started.
var errNoBrowser = errors.New("no browser connection")

// Start is Call written now and awaited later (relay.Mux.Start).
func (m muxCaller) Start(sessionID, method string, params any) func(context.Context) (jsonv2.Value, error) {
	return m.g.mux.Start(sessionID, method, params)
}

// NewAgent relays an agent connection (relay.Mux.NewAgent).
func (m muxCaller) NewAgent(ctx context.Context, conn relay.AgentConn, opts relay.AgentOptions) (*relay.Agent, error) {
	return m.g.mux.NewAgent(ctx, conn, opts)
}

// Send is Call without a reply (relay.Mux.Send).
func (m muxCaller) Send(sessionID, method string, params any) error {
	if m.g.mux == nil {
		return errNoBrowser
	}
	return m.g.mux.Send(sessionID, method, params)
}
