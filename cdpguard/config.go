package cdpguard

import (
	"io"
	"log/slog"
	"time"
)

// Config configures a Guard. Its zero value is safe: an empty allowlist
// blocks every network request, dialogs nobody answers are dismissed, and the
// endpoint listens on a random loopback port.
type Config struct {
	// Allow holds allowlist entries (README "Policy language"); each string
	// may hold several entries separated by ';', ',' or new lines. Empty
	// blocks everything.
	Allow []string
	// Block holds blocklist entries, checked before Allow.
	Block []string
	// PolicyFile, when set, is the policy's one source: a YAML file with
	// allow, block, instructions and optional groups (README "Policy
	// file"); Allow, Block and Instructions must then be empty. The guard
	// polls it and reloads it in place when it changes (ReloadPolicy reads
	// it at once); a bad file changes nothing.
	PolicyFile string
	// PolicyPoll is how often PolicyFile is polled; zero means 500 ms.
	PolicyPoll time.Duration
	// Listen is the endpoint's address; "" means 127.0.0.1:0.
	Listen string
	// EgressListen is the shared egress proxy listener's address, a
	// loopback one; "" means 127.0.0.1:0. Fix it to point a Chrome of your
	// own at the guard (--proxy-server) in attach mode.
	EgressListen string
	// ChromePath is the browser binary for Launch; "" finds chromium,
	// chromium-browser or google-chrome on PATH.
	ChromePath string
	// Headed shows the browser window (Launch only).
	Headed bool
	// ChromeFlags are extra browser flags, each one whole flag; commas inside
	// a flag are kept, and --disable-features/--enable-features lists are
	// merged with the guard's own.
	ChromeFlags []string
	// HostMap maps names to addresses for Chrome and the egress proxy, as
	// PATTERN=IP ("*.test=127.0.0.1").
	HostMap []string
	// Instructions is added to the explanation page of a blocked navigation.
	Instructions string
	// SearchURL is the prefix of a search engine's result pages: the reader
	// notes on them that search results are not a source.
	SearchURL string
	// ReadLoadTimeout bounds the reader's wait for a page to finish loading;
	// zero means 10 s. The page is read after it either way, with a note.
	ReadLoadTimeout time.Duration
	// ReadSettleTimeout bounds the reader's further wait, once a page has
	// loaded, for it to settle: network quiet and DOM unchanged for 500 ms
	// (a page that renders its text by script). Zero means 3 s; negative,
	// no wait. The page is read after it either way.
	ReadSettleTimeout time.Duration
	// BlockedNavigation selects how a blocked top-level navigation is
	// answered: "page" (default, a 403 explanation page) or "error"
	// (net::ERR_BLOCKED_BY_CLIENT).
	BlockedNavigation string
	// DialogGrace is how long an agent that has Page events enabled on a
	// page may take to answer its JavaScript dialog before the guard
	// answers it (dialogs nobody listens for are answered at once). Zero
	// means 3 s (internal/dialogs.DefaultGrace); negative answers at once.
	DialogGrace time.Duration
	// PauseTimeout bounds how long a paused request may wait for a verdict
	// before it is failed. Zero means 10 s.
	PauseTimeout time.Duration
	// PublicHosts are extra Host header names the endpoint accepts besides
	// IP literals and localhost.
	PublicHosts []string
	// UserDataDir is the browser profile for Launch; "" is a fresh temporary
	// directory removed on Close.
	UserDataDir string
	// SessionHeader names the request header that keys a user; "" means
	// X-LibreChat-User. Each user gets one browser context.
	SessionHeader string
	// RequireSessionHeader refuses connections without the header instead of
	// giving them the shared fallback context.
	RequireSessionHeader bool
	// SessionIdle disposes a user's contexts after this long with no
	// connection and no activity; zero means 15 minutes, negative never.
	SessionIdle time.Duration
	// AllowPrivate lists CIDR ranges (or addresses) the egress proxy may
	// dial even though they are loopback, private or link-local; each
	// string may hold several separated by ',', ';', spaces or new lines.
	AllowPrivate []string
	// ServiceWorkers is "block" (default: registration is refused) or
	// "guard" (they run, and all their traffic is judged).
	ServiceWorkers string
	// DownloadDir, when set, receives downloads: each user gets a directory
	// under it, capped at DownloadMaxBytes. Empty denies every download.
	DownloadDir string
	// DownloadMaxBytes caps each user's download directory; zero means
	// 100 MiB, negative no cap.
	DownloadMaxBytes int64
	// UploadDir, when set, is the only directory files may be uploaded
	// from (DOM.setFileInputFiles, dropped files), after links are
	// resolved. Empty refuses every upload of a local file.
	UploadDir string
	// AgentWriteTimeout cuts off an agent that does not read its socket: a
	// message that cannot be written within it closes the connection. Zero
	// means 10 s.
	AgentWriteTimeout time.Duration
	// AgentQueueBytes bounds the replies and events the guard holds for one
	// agent connection (the MCP tools' included): over an eighth of it the
	// guard stops reading the agent's commands until it has read its queue
	// down (back-pressure); an agent over it, or over the eighth for longer
	// than AgentWriteTimeout, is closed with a reason. Zero means 64 MiB
	// (DefaultAgentQueueBytes); one reply or event is at most half of it
	// and at most 32 MiB.
	AgentQueueBytes int64
	// UserQueueBytes bounds the same for all of one user's connections
	// together (back-pressure at a quarter of it), so that one user cannot
	// grow the guard by opening more connections. Zero means 64 MiB.
	UserQueueBytes int64
	// AgentTotalBytes is the one byte budget of what the guard holds for
	// agents: replies and events queued for all of them, and messages and
	// /mcp bodies still being received. A message being received past it
	// closes its connection naming the bound; a body past it is refused
	// (503). Zero means 512 MiB; negative, no bound.
	AgentTotalBytes int64
	// UserReceiveBytes is one user's share of AgentTotalBytes for what is
	// being received, so that one user's connections cannot take it all.
	// Zero means 128 MiB (two whole 64 MiB messages); negative, no share.
	UserReceiveBytes int64
	// AgentReceiveTimeout bounds receiving one agent message: from its
	// first byte it has this long plus a second per MiB received (1 MiB/s
	// on average); past it the connection is closed naming the bound.
	// Waiting for a message has no bound. Zero means 10 s.
	AgentReceiveTimeout time.Duration
	// BrowserMessageBytes bounds one message read from the browser. A
	// larger answer reaches its agent as a CDP error naming the bound, a
	// larger Fetch.requestPaused is failed, another larger event is dropped
	// (on a WebSocket to an attached browser, whose framing such a message
	// breaks, it ends the connection). Zero means 256 MiB
	// (DefaultBrowserMessageBytes): screenshots and evaluation results run
	// to tens of MB. Less than 1 MiB is a ConfigError.
	BrowserMessageBytes int
	// MaxTabsPerUser caps one user's open tabs: Target.createTarget and
	// /json/new past it are refused naming the cap, and a popup past it is
	// closed at once. Zero means 32; negative, no cap.
	MaxTabsPerUser int
	// MaxContextsPerUser caps the browser contexts one user may create
	// besides its own (Target.createBrowserContext). Zero means 8;
	// negative, no cap.
	MaxContextsPerUser int
	// MaxUsers caps the users with a browser context at once: each is a
	// context in the one Chromium, whose browser process grows with every
	// one. A new user past it is refused naming the cap (HTTP 503, a CDP
	// refusal over MCP); existing users keep working. Zero means
	// DefaultMaxUsers; negative, no cap.
	MaxUsers int
	// MaxContexts caps the browser contexts of all users together (each
	// user's own plus those they create). Zero means DefaultMaxContexts;
	// negative, no cap.
	MaxContexts int
	// MaxTabs caps the open tabs of all users together: each costs
	// Chromium a renderer's memory, and one client may pose as many users.
	// Past it a new tab is refused naming the cap (a popup closed at
	// once); existing tabs keep working. Zero means DefaultMaxTabs;
	// negative, no cap.
	MaxTabs int
	// MaxConnsPerUser caps one user's agent connections (CDP
	// WebSockets and the MCP server's): each holds guard memory and
	// queues. Zero means DefaultMaxConnsPerUser; negative, no cap.
	MaxConnsPerUser int
	// SessionHeaderBytes caps the session header's value, which becomes
	// a user key held in memory and written in log lines: a request with a
	// longer one is refused (HTTP 431) naming the header and the cap. Zero
	// means DefaultSessionHeaderBytes; negative, no cap.
	SessionHeaderBytes int
	// NewUsersPerSecond and NewUsersBurst are the token bucket of new
	// users (each a browser context to create): a new user past it is
	// refused (HTTP 429) naming the cap. Zero means DefaultNewUsersPerSecond
	// and DefaultNewUsersBurst; a negative rate, no cap.
	NewUsersPerSecond float64
	NewUsersBurst     int
	// Controls shows a human the guard in every page (a badge, a panel, and
	// an "Allow <host> for this session" button on the explanation page),
	// and gives a human --dialog-grace to answer a dialog. The command line
	// turns it on with --headed and in attach.
	Controls bool
	// DisableMCP turns off the MCP server at /mcp (--mcp=false).
	DisableMCP bool
	// MCPCallTimeout bounds every MCP tool call; zero means 30 s. A call
	// that hits it says what did not finish and frees the user's browser.
	MCPCallTimeout time.Duration
	// MCPDialogWait is how long a dialog on a tab the MCP tools drive waits
	// for browser_handle_dialog before the guard dismisses it; zero means
	// 60 s. CDP agents keep DialogGrace.
	MCPDialogWait time.Duration
	// MCPImageMaxBytes (base64-encoded) and MCPImageMaxSide (pixels on the
	// long side) bound every MCP image result; zero means 1 MB and 2,000.
	MCPImageMaxBytes int
	MCPImageMaxSide  int
	// MCPMaxSessions and MCPMaxSessionsPerUser cap the open MCP sessions
	// in all and per user: an initialize past either is refused (HTTP 503
	// and 429) naming the cap; open sessions keep working. Zero means 256
	// and 8; negative, no cap.
	MCPMaxSessions        int
	MCPMaxSessionsPerUser int
	// MCPSessionIdle closes an MCP session without requests for this
	// long; the client starts a new one. Zero means 5 minutes.
	MCPSessionIdle time.Duration
	// MCPMaxBodies and MCPMaxBodiesPerUser cap the /mcp request bodies
	// being read at once, in all and per user: a request past either is
	// refused (503, 429) naming the cap. Zero means 64 and 8; negative, no
	// cap. Their bytes come from AgentTotalBytes.
	MCPMaxBodies        int
	MCPMaxBodiesPerUser int
	// MCPBodyTimeout bounds reading one /mcp request body; past it the
	// request is refused (408) naming the bound. Zero means 10 s.
	MCPBodyTimeout time.Duration
	// Version is cdpguard's version, shown as the MCP serverInfo.version.
	Version string
	// ChromeStderr receives the launched browser's output; nil discards it.
	ChromeStderr io.Writer
	// Logger receives the guard's logs; nil discards them.
	Logger *slog.Logger
}
